"""sql, compare, check and history: statistics on constructed cases, and the commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from conftest import snapshot

from evalstore import Store
from evalstore.analysis.compare import TIE_TOLERANCE, compare, paired_stats


def lists(
    quality: float, seed: int = 0, n_lists: int = 20, n_items: int = 30
) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    group = np.repeat(np.arange(n_lists), n_items)
    labels = rng.choice([-1, -1, 1], size=group.size)
    noise = np.random.default_rng(99).standard_normal(group.size)
    return {
        "group_id": group,
        "item_id": np.arange(group.size),
        "score": noise + quality * (labels == 1),
        "label": labels,
    }


@pytest.fixture
def runs(db: Path) -> Path:
    with Store(db) as store:
        for name, quality, day in (("a", 0.3, 1), ("same", 0.3, 2), ("better", 2.0, 3)):
            store.ingest(
                lists(quality),
                task="retrieval",
                run=f"exp/{name}",
                created_at=f"2026-02-0{day}",
                params={"lr": 0.01 if name != "better" else 0.001, "arch": "r18"},
            )
    return db


def test_identical_runs_differ_by_zero_with_p_one(runs: Path) -> None:
    with Store(runs) as store:
        [row] = compare(store, ["exp/a", "exp/same"]).to_dicts()
    assert row["diff"] == 0.0
    assert row["ci_low"] == 0.0 and row["ci_high"] == 0.0
    assert row["p_value"] == 1.0
    assert (row["wins"], row["ties"], row["losses"]) == (0, 20, 0)


def test_a_run_better_on_every_list_has_an_interval_above_zero(runs: Path) -> None:
    with Store(runs) as store:
        [row] = compare(store, ["exp/a", "exp/better"]).to_dicts()
        per_list = store.con.sql(
            "select b.value - a.value from list_values a join list_values b using (group_id) "
            "where a.run_id = 1 and b.run_id = 3"
        ).fetchall()
    assert all(d > 0 for (d,) in per_list)  # better on every list
    assert row["diff"] == pytest.approx(np.mean([d for (d,) in per_list]), rel=1e-12)
    assert 0 < row["ci_low"] < row["diff"] < row["ci_high"]
    assert row["wins"] == 20 and row["losses"] == 0
    assert row["p_value"] < 0.001


def test_paired_stats_exact_sign_flip_test() -> None:
    # 4 lists, differences 1, 2, 3, 4: of the 16 sign assignments only ++++ and ---- reach
    # |mean| = 2.5, so p = 2/16
    stats = paired_stats(np.array([1.0, 2.0, 3.0, 4.0]), n_boot=2000)
    assert stats.p_value == 2 / 16
    assert stats.mean == 2.5
    # the bootstrap interval of the mean lies within the range of the data, around the mean
    assert 1.0 <= stats.ci_low < 2.5 < stats.ci_high <= 4.0
    again = paired_stats(np.array([1.0, 2.0, 3.0, 4.0]), n_boot=2000)
    assert again == stats  # seeded


def test_differences_within_the_tolerance_are_ties() -> None:
    d = np.array([0.0, 1e-12, -1e-12, 4e-13, 2e-12, -3e-12, 0.5, np.nan])
    stats = paired_stats(d)
    assert (stats.positive, stats.zero, stats.negative) == (2, 4, 1)
    assert stats.n == 7
    assert TIE_TOLERANCE == 1e-12


def test_paired_stats_monte_carlo_is_seeded_and_bounded() -> None:
    rng = np.random.default_rng(1)
    d = rng.normal(0, 1, 200)
    a, b = paired_stats(d, seed=3), paired_stats(d, seed=3)
    assert a == b and 0 < a.p_value <= 1
    shifted = paired_stats(d + 1.0, seed=3)
    assert shifted.p_value == pytest.approx(1 / 10_001)


def test_different_list_sets_are_refused(db: Path) -> None:
    with Store(db) as store:
        store.ingest(lists(0.5, n_lists=20), task="retrieval", run="x")
        store.ingest(lists(0.5, n_lists=17), task="retrieval", run="y")
    with Store(db) as store, pytest.raises(Exception, match="different retrieval lists for ap: 3"):
        compare(store, ["x", "y"])


def test_compare_command(runs: Path, cli: Any) -> None:
    result = cli("compare", "exp/a", "exp/same", "exp/better", "--format", "json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["run"] for r in rows] == ["exp/same", "exp/better"]
    assert all(r["baseline"] == "exp/a" for r in rows)
    assert {
        "value",
        "baseline_value",
        "diff",
        "ci_low",
        "ci_high",
        "p_value",
        "wins",
        "ties",
        "losses",
    } <= set(rows[0])
    table = cli("compare", "exp/a", "exp/better")
    assert table.exit_code == 0 and "map" in table.stdout
    assert cli("compare", "exp/a").exit_code == 1


def test_check_exit_codes(runs: Path, cli: Any) -> None:
    worse = cli("check", "exp/a", "--baseline", "exp/better")
    assert worse.exit_code == 3
    assert worse.stdout.startswith("REGRESSION retrieval map:")
    same = cli("check", "exp/same", "--baseline", "exp/a")
    assert same.exit_code == 0 and same.stdout.startswith("ok retrieval map:")
    tolerated = cli("check", "exp/a", "--baseline", "exp/better", "--min-effect", "0.9")
    assert tolerated.exit_code == 0 and "worse by at most 0.9" in tolerated.stdout


def test_history_with_best_so_far(runs: Path, cli: Any) -> None:
    result = cli("history", "--metric", "map", "--experiment", "exp", "--format", "json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["run"] for r in rows] == ["exp/a", "exp/same", "exp/better"]
    assert rows[-1]["best_so_far"] == rows[-1]["value"] > rows[0]["value"]
    assert rows[1]["best_so_far"] == rows[0]["value"]


def test_sql_is_read_only_and_binds_parameters(runs: Path, cli: Any, tmp_path: Path) -> None:
    assert cli("eval", "--all").exit_code == 0
    before = snapshot(runs)
    result = cli(
        "sql",
        "select run, value from v_metrics where value > $v order by value",
        "-p",
        "v=0.0",
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)) == 3
    refused = cli("sql", "delete from runs")
    assert refused.exit_code == 1 and "read-only" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    bad = cli("sql", "select nope from v_runs")
    assert bad.exit_code == 1 and bad.stderr.startswith("Error: SQL error:")
    out = tmp_path / "m.parquet"
    assert cli("sql", "select * from v_lists", "--format", "parquet", "-o", str(out)).exit_code == 0
    assert pl.read_parquet(out).height == 60
    assert snapshot(runs) == before


def docs_queries() -> list[str]:
    """The queries of docs/sql.md, "Query with SQL" (one ```sql block, `;`-separated)."""
    page = (Path(__file__).parent.parent / "docs" / "sql.md").read_text()
    section = page.split("# Query with SQL", 1)[1]
    block = section.split("```sql", 1)[1].split("```", 1)[0]
    return [q.strip() for q in block.split(";") if q.strip()]


def test_docs_have_five_queries() -> None:
    assert len(docs_queries()) == 5


@pytest.mark.parametrize("number", range(5))
def test_docs_queries_run(runs: Path, cli: Any, number: int) -> None:
    assert cli("eval", "--all").exit_code == 0
    query = docs_queries()[number]
    result = cli("sql", query, "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout), query


def test_one_unnamed_list_resamples_its_items(db: Path) -> None:
    """A verification run without a group column is one list (group NULL): compare resamples
    its items, as for any ranking metric below 10 lists (not a value of the whole run, such
    as ece's, which has no item test)."""
    rng = np.random.default_rng(5)
    label = np.where(rng.random(400) < 0.5, 1, -1)
    with Store(db) as store:
        for name, noise in (("a", 0.5), ("b", 1.5)):
            scores = label + noise * rng.standard_normal(400)
            store.ingest({"item_id": np.arange(400), "score": scores, "label": label},
                         task="verification", run=f"one/{name}", git_commit=None)  # fmt: skip
        found = compare(store, ["one/a", "one/b"], n_boot=200)
    assert found["resampled"].to_list() == ["items", "items"]
    assert (found["ci_low"] < found["ci_high"]).all()
