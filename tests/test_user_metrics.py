"""Users' metrics as files (evalstore.metrics.user): found in --metrics-dir, $EVALSTORE_METRICS
or ./metrics/, known to every command in a fresh process, refused in one line when broken,
stale when edited, and checked against a Python twin from a real entry point."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ingest_lists
from typer.testing import CliRunner

from evalstore import Store
from evalstore.analysis.evaluate import evaluate
from evalstore.cli import app
from evalstore.errors import InvalidInput
from evalstore.metrics import registry as metrics
from evalstore.metrics.user import load_metrics, read_metric

HERE = Path(__file__).parent / "user_metrics"
# q1: a positive on top; q2: a negative on top; q3: a tie of one positive and one negative
LISTS_A = {"q1": ([3.0, 2.0], [1, -1]), "q2": ([3.0, 1.0], [-1, 1]), "q3": ([2.0, 2.0], [1, -1])}
LISTS_B = {"q1": ([3.0, 2.0], [1, -1]), "q2": ([3.0, 4.0], [-1, 1]), "q3": ([3.0, 2.0], [1, -1])}


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    out = tmp_path / "mine"
    out.mkdir()
    shutil.copy(HERE / "hit_at_1.sql", out / "hit_at_1.sql")
    yield out
    metrics.unregister("hit_at_1")


@pytest.fixture
def store_ab(tmp_path: Path) -> Path:
    db = tmp_path / "s.duckdb"
    with Store(db) as store:
        ingest_lists(store, "exp/a", LISTS_A)
        ingest_lists(store, "exp/b", LISTS_B)
    return db


def evalstore(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None):
    """The command line in a fresh process."""
    return subprocess.run(
        [sys.executable, "-m", "evalstore", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def test_a_metric_file_is_evaluated_like_a_built_in_one(folder: Path, store_ab: Path) -> None:
    assert load_metrics([folder]) == ["hit_at_1"]
    with Store(store_ab) as store:
        got = evaluate(store, ["exp/a", "exp/b"], metrics=["hit_at_1"], by=["query"])
    values = {(r["run"], r["slice"]): r["value"] for r in got.iter_rows(named=True)}
    assert values[("exp/a", "query=q1")] == 1.0 and values[("exp/a", "query=q2")] == 0.0
    assert values[("exp/a", "query=q3")] == 0.5  # grouped: one positive of two tied on top
    assert values[("exp/a", "")] == pytest.approx(0.5) and values[("exp/b", "")] == 1.0


@pytest.mark.slow  # fresh processes
def test_every_command_knows_it_in_a_fresh_process(folder: Path, store_ab: Path) -> None:
    db = ["--db", str(store_ab)]
    dirs = ["--metrics-dir", str(folder)]
    run = evalstore(*dirs, "eval", "exp/a", "exp/b", "-m", "hit_at_1", *db)
    assert run.returncode == 0, run.stderr
    for command in (
        ["metrics", "--all", "-m", "hit_at_1", "--format", "csv"],
        ["compare", "exp/a", "exp/b", "-m", "hit_at_1", "--format", "csv"],
        ["check", "exp/b", "--baseline", "exp/a", "-m", "hit_at_1"],
        ["history", "-m", "hit_at_1", "--format", "csv"],
        ["groups", "-m", "hit_at_1", "--format", "csv"],
    ):
        done = evalstore(*dirs, *command, *db)
        assert done.returncode in (0, 1) and "Traceback" not in done.stderr, (command, done)
        assert "hit_at_1" in done.stdout + done.stderr, (command, done.stdout, done.stderr)
    page = evalstore(*dirs, "dashboard", "--out", str(folder.parent / "pages"), *db)
    assert page.returncode == 0, page.stderr
    assert "hit_at_1" in (folder.parent / "pages" / "overview.html").read_text()
    # the same folder found through $EVALSTORE_METRICS, and as ./metrics/ of the working folder
    by_env = evalstore(
        "metrics", "--all", "-m", "hit_at_1", *db, env={"EVALSTORE_METRICS": str(folder)}
    )
    assert by_env.returncode == 0 and "hit_at_1" in by_env.stdout, by_env.stderr
    work = folder.parent / "work"
    shutil.copytree(folder, work / "metrics")
    by_cwd = evalstore("metrics", "--all", "-m", "hit_at_1", *db, cwd=work)
    assert by_cwd.returncode == 0 and "hit_at_1" in by_cwd.stdout, by_cwd.stderr
    # without the folder, the metric is unknown, with a one-line error
    unknown = evalstore("metrics", "--all", "-m", "hit_at_1", *db, cwd=folder.parent)
    assert unknown.returncode == 1 and unknown.stderr.startswith("Error: unknown metric")


def test_an_edited_file_makes_its_values_stale(folder: Path, store_ab: Path) -> None:
    load_metrics([folder])
    with Store(store_ab) as store:
        first = evaluate(store, ["exp/a"], metrics=["hit_at_1"])["value"][0]
        sql = folder / "hit_at_1.sql"
        sql.write_text(sql.read_text().replace("coalesce(t.hit", "1.0 - coalesce(t.hit"))
        second = evaluate(store, ["exp/a"], metrics=["hit_at_1"])["value"][0]
    assert first == pytest.approx(0.5) and second == pytest.approx(0.5)  # 1 - 0.5: same mean
    with Store(store_ab) as store:
        rows = store.con.sql(
            "select count(distinct definition_sha) from metric_values where metric = 'hit_at_1'"
        ).fetchall()
    assert rows == [(1,)]  # the old value was replaced, under the new definition


BROKEN = {
    "no name": (
        "-- tasks: retrieval\n-- direction: higher\nselect 1",
        "'-- metric: NAME' is missing",
    ),
    "a task": (
        "-- metric: m1\n-- tasks: ranking\n-- direction: higher\nselect 1",
        "(not 'ranking')",
    ),
    "a direction": (
        "-- metric: m1\n-- tasks: retrieval\n-- direction: up\nselect 1",
        "must be higher or lower",
    ),
    "params": (
        "-- metric: m1\n-- tasks: retrieval\n-- direction: higher\n-- params: k\nselect 1",
        "name=default pairs",
    ),
    "a built-in name": (
        "-- metric: map\n-- tasks: retrieval\n-- direction: higher\nselect 1",
        "'map' is a built-in",
    ),
    "syntax": ("-- metric: m1\n-- tasks: retrieval\n-- direction: higher\nselec 1", "syntax error"),
    "a missing column": (
        "-- metric: m1\n-- tasks: retrieval\n-- direction: higher\n"
        "select run_id, group_id, nonsense as value from groups",
        'Referenced column "nonsense" not found',
    ),
    "the output": (
        "-- metric: m1\n-- tasks: retrieval\n-- direction: higher\nselect run_id, 1 as v from runs",
        "returns columns run_id, v",
    ),
    "two statements": (
        "-- metric: m1\n-- tasks: retrieval\n-- direction: higher\nselect 1; select 2",
        "holds 2 SQL statements",
    ),
    "an include": (
        "-- metric: m1\n-- tasks: retrieval\n-- direction: higher\n"
        "with\n-- @include lib/nope.sql\nselect 1",
        "an include cannot be read",
    ),
}


@pytest.mark.parametrize("case", BROKEN)
def test_a_broken_file_is_one_line_naming_it(tmp_path: Path, case: str) -> None:
    text, message = BROKEN[case]
    path = tmp_path / "m1.sql"
    path.write_text(text)
    with pytest.raises(InvalidInput) as caught:
        read_metric(path)
    line = str(caught.value)
    assert line.startswith(str(path)) and "\n" not in line and message in line, line
    assert "m1" not in metrics.METRICS


@pytest.mark.slow  # fresh processes
def test_a_broken_file_stops_a_command_in_one_line(tmp_path: Path, store_ab: Path) -> None:
    (tmp_path / "bad.sql").write_text(BROKEN["a direction"][0])
    done = evalstore("--metrics-dir", str(tmp_path), "runs", "--db", str(store_ab))
    assert done.returncode == 1
    assert (
        done.stderr
        == f"Error: {tmp_path / 'bad.sql'}: '-- direction:' must be higher or lower, not 'up'\n"
    )


def _entry_point(tmp_path: Path, target: str) -> dict[str, str]:
    """A real entry point: the twin's module and a dist-info naming it, on PYTHONPATH."""
    site = tmp_path / "site"
    (site / "twin_pkg-1.0.dist-info").mkdir(parents=True)
    shutil.copy(HERE / "twin_hit.py", site / "twin_hit.py")
    (site / "twin_pkg-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: twin-pkg\nVersion: 1.0\n"
    )
    (site / "twin_pkg-1.0.dist-info" / "entry_points.txt").write_text(
        f"[evalstore.metrics]\nhit_at_1 = twin_hit:{target}\n"
    )
    return {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}


@pytest.mark.slow  # fresh processes
def test_metric_test_compares_sql_with_the_twin_of_an_entry_point(
    folder: Path, tmp_path: Path
) -> None:
    agree = evalstore(
        "--metrics-dir",
        str(folder),
        "metric",
        "test",
        "hit_at_1",
        "--seeds",
        "12",
        env=_entry_point(tmp_path / "right", "reference"),
    )
    assert agree.returncode == 0, agree.stderr
    assert agree.stdout.strip() == "hit_at_1: SQL and twin agree on 12 random runs"
    differ = evalstore(
        "--metrics-dir",
        str(folder),
        "metric",
        "test",
        "hit_at_1",
        "--seeds",
        "3",
        env=_entry_point(tmp_path / "wrong", "wrong"),
    )
    assert differ.returncode == 1 and "SQL and twin disagree" in differ.stderr
    assert "twin 1.0" in differ.stdout  # the lists where they differ, one line each


def test_metric_test_without_a_twin_says_how_to_give_one(folder: Path) -> None:
    load_metrics([folder])
    done = CliRunner().invoke(app, ["metric", "test", "hit_at_1"])
    assert done.exit_code == 1
    assert "has no Python twin: register one (entry point group 'evalstore.metrics'" in done.stderr


@pytest.mark.slow  # the twin test: seeded random stores, about 9 s
def test_register_twin_from_python(folder: Path) -> None:
    sys.path.insert(0, str(HERE))
    try:
        import twin_hit

        from evalstore.analysis.twins import check_twin
        from evalstore.metrics.user import register_twin

        load_metrics([folder])
        register_twin("hit_at_1", twin_hit.reference)
        assert check_twin("hit_at_1", seeds=5) == []
        register_twin("hit_at_1", twin_hit.wrong)
        assert check_twin("hit_at_1", seeds=2)
    finally:
        sys.path.remove(str(HERE))
        from evalstore.metrics.user import forget_twin

        forget_twin("hit_at_1")


def test_a_global_metric_is_one_value_per_run(tmp_path: Path, store_ab: Path) -> None:
    (tmp_path / "top_share.sql").write_text(
        "-- metric: top_share\n-- tasks: retrieval\n-- direction: higher\n-- kind: global\n"
        "-- The share of positives among every list's top-scored items, pooled over the run.\n"
        "with\n-- @include lib/ranking_points.sql\n"
        "select run_id, cast(null as varchar) as group_id,\n"
        "       cast(sum(d_tp) as double) / nullif(cast(sum(d_tp + d_fp) as double), 0) as value\n"
        "from curve where rn = 1 group by run_id\n"
    )
    try:
        assert load_metrics([tmp_path]) == ["top_share"]
        with Store(store_ab) as store:
            got = evaluate(store, ["exp/a"], metrics=["top_share"])
        row = got.row(0, named=True)
        assert (row["metric"], row["value"], row["n_lists"]) == ("top_share", 2 / 4, 1)
    finally:
        metrics.unregister("top_share")
