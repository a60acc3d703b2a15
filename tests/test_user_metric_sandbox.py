"""A user's metric runs in the sandbox of `evalstore sql`: its SQL reaches no file, folder,
URL or other database (when loaded and when `eval` computes it, the file being read anew), and
an include that cannot be read is one line naming it, never a traceback."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from conftest import ingest_lists

from evalstore import Store
from evalstore.analysis.evaluate import evaluate
from evalstore.db import queries
from evalstore.errors import InvalidInput
from evalstore.metrics import registry as metrics
from evalstore.metrics.user import load_metrics, read_metric

HEAD = "-- metric: leak\n-- tasks: retrieval\n-- direction: higher\n"
FINE = HEAD + (
    "select run_id, group_id, avg(case when label = 1 then 1.0 else 0.0 end) as value\n"
    "from scores where list_contains($runs, run_id) and task = $task group by all\n"
)
#: each reads (or would reach) something outside the store
LEAKS = {
    "read_csv": (
        "select r.run_id, p.column0 as group_id, 1.0 as value from (select unnest($runs) as "
        "run_id) r, read_csv('/etc/passwd', header = false, sep = '\\x01') p"
    ),
    "read_text": (
        "select unnest($runs) as run_id, content as group_id, 1.0 as value "
        "from read_text('/etc/passwd')"
    ),
    "a file as a table": (
        "select unnest($runs) as run_id, column0 as group_id, 1.0 as value from '/etc/passwd'"
    ),
    "glob": "select unnest($runs) as run_id, file as group_id, 1.0 as value from glob('/*')",
}


@pytest.fixture
def folder(tmp_path: Path):
    out = tmp_path / "mine"
    out.mkdir()
    yield out
    if "leak" in metrics.METRICS:
        metrics.unregister("leak")


@pytest.fixture
def stored(db: Path) -> Path:
    with Store(db) as store:
        ingest_lists(store, "exp/a", {"q1": ([2.0, 1.0], [1, -1]), "q2": ([1.0], [1])})
    return db


@pytest.mark.parametrize("name", sorted(LEAKS))
def test_a_metric_that_reads_a_file_is_refused_when_loaded(folder: Path, name: str) -> None:
    path = folder / "leak.sql"
    path.write_text(HEAD + LEAKS[name] + "\n")
    with pytest.raises(InvalidInput) as refused:
        read_metric(path)
    line = str(refused.value)
    assert line.startswith(f"{path}: ") and "\n" not in line, line
    # a file named as a table is no table: replacement scans of files are off too
    assert any(m in line for m in ("disabled by configuration", "does not exist")), line


@pytest.mark.parametrize("name", sorted(LEAKS))
def test_eval_computes_a_metric_in_the_sandbox(folder: Path, stored: Path, name: str) -> None:
    """The file is read anew when the metric runs: one edited after it was loaded reads the
    store only, and nothing of the file is stored."""
    path = folder / "leak.sql"
    path.write_text(FINE)
    assert load_metrics([folder]) == ["leak"]
    with Store(stored) as store:
        got = evaluate(store, ["exp/a"], metrics=["leak"])
        assert got["value"].to_list() == [pytest.approx(0.75)]
        path.write_text(HEAD + LEAKS[name] + "\n")
        with pytest.raises(InvalidInput) as refused:
            evaluate(store, ["exp/a"], metrics=["leak"])
        line = str(refused.value)
        assert line.startswith(f"{path}: ") and "\n" not in line, line
        said = ("a metric reads the store only", "disabled by configuration", "does not exist")
        assert any(m in line for m in said), line
        values = store.con.execute(
            "select group_id from list_values where metric = 'leak'"  # test-only SQL
        ).fetchall()
        assert sorted(values) == [("q1",), ("q2",)]  # the first values, none of the file


@pytest.mark.parametrize(
    "sql",
    [
        "copy (select 1) to '{out}/copied.csv'",
        "attach '{out}/other.duckdb' as o",
        "select 1 as run_id, 'g' as group_id, 1.0 as value; copy (select 1) to '{out}/x.csv'",
    ],
)
def test_a_metric_that_writes_is_refused(folder: Path, tmp_path: Path, sql: str) -> None:
    path = folder / "leak.sql"
    path.write_text(HEAD + sql.format(out=tmp_path) + "\n")
    with pytest.raises(InvalidInput, match=str(path)):
        read_metric(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]


def test_a_twin_test_runs_in_the_sandbox(folder: Path, stored: Path) -> None:
    path = folder / "leak.sql"
    path.write_text(FINE)
    load_metrics([folder])
    path.write_text(HEAD + LEAKS["read_csv"] + "\n")
    from evalstore.analysis.twins import check_twin
    from evalstore.metrics.user import register_twin

    register_twin("leak", lambda inputs, params: None)  # never reached
    with pytest.raises(InvalidInput, match="a metric reads the store only"):
        check_twin("leak", seeds=1)


def test_an_include_that_cannot_be_read_is_one_line(cli: Any, stored: Path, folder: Path) -> None:
    bad = folder.parent / "latin1.sql"
    bad.write_bytes("-- caf\xe9\nselect 1\n".encode("latin-1"))
    escape = os.path.relpath(bad, queries.sql_dir())
    for include, said in ((escape, "is not a .sql file under"), ("lib/nope.sql", "nope.sql")):
        path = folder / "leak.sql"
        path.write_text(HEAD + f"-- @include {include}\n" + FINE.removeprefix(HEAD))
        result = cli("--metrics-dir", str(folder), "runs")
        assert result.exit_code == 1, result.output
        [line] = result.stderr.strip().splitlines()
        assert line.startswith(f"Error: {path}: ") and said in line, line
        assert isinstance(result.exception, SystemExit)  # the one line, not a traceback
