"""Configurations of seeds: groups, v_groups, compare and check of groups, the few-lists case,
Holm over a call, the leaderboard and LaTeX tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from conftest import snapshot
from scipy import stats as scipy_stats

from evalstore import Store
from evalstore.analysis.compare import compare
from evalstore.analysis.configurations import groups, select
from evalstore.analysis.gate import check
from evalstore.analysis.leaderboard import leaderboard
from evalstore.db import queries


def _lists(quality: float, seed: int, n_lists: int = 20, n_items: int = 30) -> dict[str, Any]:
    """Ranked lists with fixed labels (the same ground truth for every run) and noise that
    depends on the run's seed."""
    labels = np.random.default_rng(0).choice([-1, -1, 1], size=n_lists * n_items)
    noise = np.random.default_rng(100 + seed).standard_normal(labels.size)
    return {
        "group_id": np.repeat(np.arange(n_lists), n_items),
        "item_id": np.arange(labels.size),
        "score": noise + quality * (labels == 1),
        "label": labels,
    }


CONFIGS = {"0.01": 0.5, "0.1": 1.5}


@pytest.fixture
def seeded(db: Path) -> Path:
    """Two configurations (lr 0.01 and 0.1) x three seeds, and one run of another model."""
    with Store(db) as store:
        day = 1
        for lr, quality in CONFIGS.items():
            for seed in range(3):
                store.ingest(
                    _lists(quality + 0.1 * seed, seed + 10 * int(float(lr) * 100)),
                    task="retrieval",
                    run=f"exp/lr{lr}-seed{seed}",
                    created_at=f"2026-03-{day:02d}",
                    params={"lr": float(lr), "arch": "r18", "seed": seed},
                )
                day += 1
        store.ingest(
            _lists(1.0, 99),
            task="retrieval",
            run="exp/other",
            created_at="2026-03-20",
            params={"lr": 0.01, "arch": "vit", "seed": 0},
        )
    return db


def test_groups_are_runs_equal_but_for_the_seed(seeded: Path) -> None:
    with Store(seeded) as store:
        frame = groups(store, experiment="exp")
        values = store.con.sql(
            "select r.name, m.value from metric_values m join runs r using (run_id)"
            " where m.slice = '' and m.label = 'map'"
        ).pl()
    by_name = dict(zip(values["name"], values["value"], strict=True))
    assert frame.height == 3 and set(frame["metric"]) == {"map"}
    row = frame.filter(pl.col("group") == "exp/lr0.01").to_dicts()[0]
    mine = np.array([by_name[f"lr0.01-seed{s}"] for s in range(3)])
    assert row["n_runs"] == 3 and row["runs"] == [f"exp/lr0.01-seed{s}" for s in range(3)]
    assert row["config"] == "arch=r18, lr=0.01"
    assert row["mean"] == pytest.approx(mine.mean())
    assert row["sd"] == pytest.approx(mine.std(ddof=1))
    half = scipy_stats.t.ppf(0.975, 2) * mine.std(ddof=1) / np.sqrt(3)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(
        (mine.mean() - half, mine.mean() + half)
    )
    assert (row["min"], row["max"]) == (mine.min(), mine.max())
    single = frame.filter(pl.col("group") == "exp/other").to_dicts()[0]
    assert single["n_runs"] == 1 and single["sd"] is None and single["ci_low"] is None


def test_v_groups_is_the_same_query(seeded: Path, cli: Any) -> None:
    with Store(seeded) as store:
        mine = groups(store).sort("config")
    shown = cli(
        "sql",
        "select config, n_runs, mean, sd, ci_low, ci_high from v_groups order by config",
        "-f",
        "json",
    )
    assert shown.exit_code == 0, shown.output
    rows = json.loads(shown.stdout)
    assert [r["config"] for r in rows] == mine["config"].to_list()
    assert [r["ci_low"] for r in rows] == mine["ci_low"].to_list()


def test_t_quantiles_of_the_view_match_scipy_beyond_the_table(db: Path) -> None:
    """The t(0.975, df) of lib/t975.sql is SciPy's to 2e-8 (table to 100 degrees,
    Cornish-Fisher on), and it is the one the view, the groups command and the overview's
    history include."""
    fragment = (queries.sql_dir() / "lib" / "t975.sql").read_text(encoding="utf-8")
    text = "select " + queries.fill(
        fragment, {"table": "(select q975 from student_t where df = $df)", "df": "$df"}
    )
    with Store(db) as store:
        for df in (1, 2, 7, 100, 101, 250, 5000):
            got = store.con.execute(text, {"df": df}).fetchone()
            assert got is not None
            assert got[0] == pytest.approx(scipy_stats.t.ppf(0.975, df), abs=2e-8)
    for name, df in (
        ("store/v_groups", "s.n_values-1"),
        ("compare/groups", "s.n_values-1"),
        ("dashboards/metric_history", "p.n_values-1"),
    ):
        assert f"(384 * ({df}) ^ 3)" in queries.load(name).text, name


def test_seed_param_and_group_by(seeded: Path, cli: Any) -> None:
    by_arch = cli("groups", "--group-by", "arch", "-f", "json")
    assert by_arch.exit_code == 0, by_arch.output
    assert sorted(r["n_runs"] for r in json.loads(by_arch.stdout)) == [1, 6]
    no_seed = cli("groups", "--seed-param", "lr", "-f", "json")
    rows = json.loads(no_seed.stdout)
    assert sorted(r["n_runs"] for r in rows) == [1, 2, 2, 2]  # (arch, seed): lr tells apart
    bad = cli("groups", "--group-by", "")
    assert bad.exit_code in (1, 2)


def test_selectors_name_one_configuration(seeded: Path, cli: Any) -> None:
    with Store(seeded) as store:
        unit = select(store, "lr=0.1")
        assert unit.run_ids and len(unit.run_ids) == 3 and unit.seeds == ("0", "1", "2")
        assert select(store, "lr=0.010,arch=r18").label == "exp/lr0.01"
    before = snapshot(seeded)
    for args, words in [
        (["-g", "lr=0.01", "-g", "lr=0.1"], "2 configurations"),
        (["-g", "lr=0.5", "-g", "lr=0.1"], "no run"),
        (["-g", "lr", "-g", "lr=0.1"], "KEY=VALUE"),
        (["-g", "lr=0.1", "-g", "lr=0.1"], "named twice"),
    ]:
        result = cli("compare", *args)
        assert result.exit_code == 1, result.output
        assert words in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert snapshot(seeded) == before


def test_compare_of_configurations_is_hierarchical(seeded: Path) -> None:
    with Store(seeded) as store:
        frame = compare(store, groups=["lr=0.01,arch=r18", "lr=0.1"])
        [row] = frame.to_dicts()
        lists = store.con.sql(
            "select r.params->>'$.lr' as lr, v.group_id, avg(v.value) as v from list_values v"
            " join runs r using (run_id) where r.name <> 'other' group by all"
        ).pl()
    assert (row["baseline"], row["run"]) == ("exp/lr0.01", "exp/lr0.1")
    assert row["resampled"] == "seeds+lists" and row["n_runs"] == row["baseline_runs"] == 3
    wide = lists.pivot(on="lr", index="group_id", values="v")
    d = wide["0.1"] - wide["0.01"]
    assert row["diff"] == pytest.approx(float(d.mean()))
    assert row["ci_low"] < row["diff"] < row["ci_high"] and row["ci_low"] > 0
    assert row["wins"] == int((d > 0).sum()) and row["p_value"] < 0.05
    assert row["effect_size"] == pytest.approx(float(d.mean() / d.std()))


def test_holm_over_every_metric_and_run_of_a_call(seeded: Path) -> None:
    with Store(seeded) as store:
        frame = compare(
            store,
            ["exp/lr0.01-seed0", "exp/lr0.01-seed1", "exp/lr0.1-seed0"],
            metrics=["ap", "ap_voc10", "recall_at_k"],
            k=5,
        )
    assert frame.height == 6
    p = frame["p_value"].to_numpy()
    order = np.argsort(p, kind="stable")
    expected = np.maximum.accumulate(np.minimum(1, (6 - np.arange(6)) * p[order]))
    assert frame["p_adj"].to_numpy()[order] == pytest.approx(expected)


def test_check_gates_on_p_adj_and_counts_its_comparisons(seeded: Path, cli: Any) -> None:
    worse = cli("check", "-g", "lr=0.01,arch=r18", "--baseline-group", "lr=0.1")
    assert worse.exit_code == 3, worse.output
    assert worse.stdout.startswith("REGRESSION retrieval map:") and "p_adj" in worse.stdout
    assert "1 comparison (Holm-corrected at alpha 0.05; resampled seeds+lists)" in worse.stdout
    better = cli("check", "-g", "lr=0.1", "-G", "arch=r18,lr=0.01")
    assert better.exit_code == 0 and "not worse" in better.stdout
    tolerated = cli("check", "-g", "lr=0.01,arch=r18", "-G", "lr=0.1", "--min-effect", "0.9")
    assert tolerated.exit_code == 0
    mixed = cli("check", "exp/other", "-G", "lr=0.01,arch=r18")
    assert mixed.exit_code in (0, 3) and "comparison" in mixed.stdout
    both = cli("check", "exp/other", "-g", "lr=0.01", "-b", "exp/lr0.1-seed0")
    assert both.exit_code == 1 and "one of them" in both.stderr


def test_check_and_compare_agree_and_compute_what_is_missing(seeded: Path, cli: Any) -> None:
    """check tests the standard metrics (map for retrieval) even when only another metric was
    cached, and reports the p-value compare reports for the same pair."""
    assert cli("eval", "exp/other", "exp/lr0.1-seed0", "-m", "ap_voc10").exit_code == 0
    with Store(seeded) as store:
        store.con.execute("delete from metric_values where label = 'map'")
        store.con.execute("delete from list_values where metric = 'ap'")
        regressed, lines, gated = check(store, "exp/other", "exp/lr0.1-seed0")
        shown = compare(store, ["exp/lr0.1-seed0", "exp/other"])
    assert list(gated["metric"]) == ["map"] == list(shown["metric"])
    assert gated["p_value"].to_list() == shown["p_value"].to_list()
    assert regressed == bool(gated["p_adj"][0] < 0.05 and gated["diff"][0] < 0)
    assert len(lines) == 2


def _pairs(rng: np.random.Generator, n: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    labels = rng.choice(np.array([1, -1]), size=n)
    return labels, rng.standard_normal(n) + 1.0 * (labels == 1)


def _verification(store: Store, name: str, labels: np.ndarray, scores: np.ndarray) -> None:
    store.ingest(
        {"score": scores, "label": labels, "item_id": np.arange(labels.size)},
        task="verification",
        run=f"pv/{name}",
    )


@pytest.mark.slow  # a simulation: the item bootstrap of 2,000 pairs, three runs
def test_one_list_of_random_pairs_is_no_regression(db: Path, cli: Any) -> None:
    """Patch verification is one list: a tiny difference between two runs on 2,000 pairs is
    resampled over items, not over the one list, so its interval is not of zero width and the
    gate passes; so does a second, unrelated random run."""
    rng = np.random.default_rng(21)
    labels = rng.choice(np.array([1, -1]), size=2000)
    scores = rng.random(2000)
    with Store(db) as store:
        _verification(store, "a", labels, scores)
        _verification(store, "b", labels, scores + rng.normal(0, 0.003, 2000))
        _verification(store, "c", labels, rng.random(2000))
        [row] = compare(store, ["pv/a", "pv/b"], metrics=["ap"]).to_dicts()
    assert row["resampled"] == "items" and row["n_lists"] == 1
    assert abs(row["diff"]) < 0.002 and row["ci_low"] < 0 < row["ci_high"]
    for other in ("pv/b", "pv/c"):
        gate = cli("check", other, "--baseline", "pv/a", "-m", "ap")
        assert gate.exit_code == 0, gate.output
        assert "resampled items" in gate.stdout
    lists_only = cli("check", "pv/b", "-b", "pv/a", "--resample", "lists", "-m", "ap")
    assert "p_adj 1" in lists_only.stdout  # one list: nothing to resample, never significant


@pytest.mark.slow  # a simulation: the item bootstrap of 2,000 pairs
def test_a_real_drop_of_two_points_on_one_list_is_a_regression(db: Path, cli: Any) -> None:
    rng = np.random.default_rng(22)
    labels, scores = _pairs(rng)
    noisy = scores + rng.normal(0, 0.45, scores.size)
    with Store(db) as store:
        _verification(store, "good", labels, scores)
        _verification(store, "worse", labels, noisy)
        [row] = compare(store, ["pv/good", "pv/worse"], metrics=["ap"]).to_dicts()
    assert -0.03 < row["diff"] < -0.015  # about 0.02 AP lost
    assert row["ci_high"] < 0 and row["p_value"] < 0.01
    gate = cli("check", "pv/worse", "--baseline", "pv/good")
    assert gate.exit_code == 3, gate.output
    assert gate.stdout.startswith("REGRESSION verification ap")  # one list: ap, not map


def test_few_lists_of_configurations_resample_seeds_and_items(db: Path) -> None:
    rng = np.random.default_rng(23)
    labels, scores = _pairs(rng, 600)
    with Store(db) as store:
        for noise, tag in ((0.2, "small"), (1.5, "large")):
            for seed in range(3):
                store.ingest(
                    {
                        "score": scores + rng.normal(0, noise, 600),
                        "label": labels,
                        "item_id": np.arange(600),
                    },
                    task="verification",
                    run=f"pv/{tag}-seed{seed}",
                    params={"noise": noise, "seed": seed},
                )
        [row] = compare(store, groups=["noise=0.2", "noise=1.5"], metrics=["ap"]).to_dicts()
    assert row["resampled"] == "seeds+items"
    assert row["ci_high"] < 0 and row["p_value"] < 0.05


def test_leaderboard_ranks_configurations_by_headline_metrics(seeded: Path, cli: Any) -> None:
    with Store(seeded) as store:
        board = leaderboard(store)
        wide = board.wide()
        by_run = leaderboard(store, runs=True).wide()
    assert board.columns == ["retrieval map"] and board.higher == {"retrieval map": True}
    assert wide["group"].to_list()[0] == "exp/lr0.1"  # best first
    assert wide["retrieval map"].is_sorted(descending=True)
    assert wide["retrieval map sd"][0] is not None and by_run.height == 7
    shown = cli("leaderboard")
    assert shown.exit_code == 0 and "±" in shown.stdout
    assert board.best()["retrieval map"] == {("exp", "exp/lr0.1")}


def test_latex_tables(seeded: Path, cli: Any) -> None:
    table = cli("leaderboard", "-f", "latex")
    assert table.exit_code == 0, table.output
    text = table.stdout
    assert text.startswith("\\begin{table}") and "\\toprule" in text and "\\bottomrule" in text
    best = [line for line in text.splitlines() if "\\textbf{" in line]
    assert len(best) == 1 and best[0].startswith("exp/lr0.1 &") and "$\\pm$" in best[0]
    assert "Protocol: evalstore default" in text
    grouped = cli("groups", "-f", "latex")
    assert grouped.exit_code == 0 and "\\textbf{" in grouped.stdout
    for command in (
        ["runs"],
        ["metrics", "exp/other"],
        ["compare", "-g", "lr=0.01,arch=r18", "-g", "lr=0.1"],
    ):
        shown = cli(*command, "-f", "latex")
        assert shown.exit_code == 0, shown.output
        assert "\\begin{tabular}" in shown.stdout and "\\_" in shown.stdout
