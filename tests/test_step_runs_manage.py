"""rm and mv of runs with step runs: removing a run removes its step runs, their run_steps
links and its run_state row in one transaction; removing a step run alone removes its link
and its run's stored values; mv renames the step runs to NEW@STEP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import ranked, snapshot
from step_runs import training_store

from evalstore import Store
from evalstore.analysis.evaluate import evaluate
from evalstore.errors import RunExists


@pytest.fixture
def trained(db: Path) -> tuple[Path, dict[str, Any]]:
    with Store(db) as store:
        ids = training_store(store)
        store.con.execute(
            "insert into run_state values (?, 'finished', 1, 'h', now(), now(), now())",
            [ids["r"]],
        )
        evaluate(store, None, all_runs=True, metrics=["ap"])
        evaluate(store, ["exp/r@0", "exp/r@1", "exp/r@2"], metrics=["ap"])
    return db, ids


def count(store: Store, table: str, run_ids: list[int]) -> int:
    column = "step_run_id" if table == "run_steps" else "run_id"
    found = store.con.execute(
        f"select count(*) from {table} where list_contains(?, {column})",  # test-only SQL
        [run_ids],
    ).fetchall()
    return int(found[0][0])


def test_rm_removes_the_step_runs_links_and_state(trained: tuple[Path, Any], cli: Any) -> None:
    db, ids = trained
    steps = list(ids["steps"].values())
    done = cli("rm", "exp/r", "--yes")
    assert done.exit_code == 0, done.output
    with Store(db) as store:
        names = store.con.sql("select experiment || '/' || name from runs").fetchall()
        assert {n for (n,) in names} == {"exp/r-s1", "exp/other"}
        for table in ("runs", "groups", "metric_values", "list_values", "run_steps"):
            assert count(store, table, [ids["r"], *steps]) == 0, table
        assert store.con.sql("select count(*) from run_steps").fetchall() == [(0,)]
        assert store.con.sql("select count(*) from run_state").fetchall() == [(0,)]
        assert count(store, "metric_values", [ids["r-s1"], ids["other"]]) == 2  # untouched


def test_remove_many_and_experiment_take_the_step_runs(trained: tuple[Path, Any]) -> None:
    db, _ids = trained
    with Store(db) as store:
        gone = store.remove_many(experiment="exp")
        assert len(gone) >= 3
        assert store.con.sql("select count(*) from runs").fetchall() == [(0,)]
        assert store.con.sql("select count(*) from run_steps").fetchall() == [(0,)]
        assert store.con.sql("select count(*) from run_state").fetchall() == [(0,)]


def test_removing_a_step_run_clears_its_link_and_its_runs_values(
    trained: tuple[Path, Any],
) -> None:
    db, ids = trained
    with Store(db) as store:
        assert count(store, "metric_values", [ids["r"]]) == 1
        store.remove("exp/r@2")
        links = store.con.sql("select step from run_steps order by step").fetchall()
        assert links == [(0,), (1,)]
        assert count(store, "metric_values", [ids["r"]]) == 0  # its last step changed
        assert count(store, "list_values", [ids["r"]]) == 0
        assert count(store, "metric_values", [ids["steps"][1]]) == 1  # the other steps keep
        assert store.resolve("exp/r") == ids["r"]


def test_ingest_replace_of_a_run_takes_its_step_runs(trained: tuple[Path, Any]) -> None:
    """A run replaced by an ingest keeps its id but not its rows: its step runs, their links
    and its state go with the old rows, in the ingest's transaction."""
    db, ids = trained
    steps = list(ids["steps"].values())
    with Store(db) as store:
        store.ingest(ranked(seed=7), task="retrieval", run="exp/r", replace=True)
        assert store.con.sql("select count(*) from run_steps").fetchall() == [(0,)]
        assert store.con.sql("select count(*) from run_state").fetchall() == [(0,)]
        assert count(store, "runs", steps) == 0
        assert count(store, "groups", steps) == 0
        assert store.resolve("exp/r") == ids["r"]  # the id kept: links to it still work


def test_mv_renames_the_step_runs_too(trained: tuple[Path, Any], cli: Any) -> None:
    db, ids = trained
    done = cli("mv", "exp/r", "other-exp/run")
    assert done.exit_code == 0, done.output
    with Store(db) as store:
        rows = store.con.sql("select step_run, step from v_steps order by step").fetchall()
        assert rows == [("other-exp/run@0", 0), ("other-exp/run@1", 1), ("other-exp/run@2", 2)]
        assert store.resolve("other-exp/run@1") == ids["steps"][1]
        store.rename("other-exp/run", "r2")
        assert store.resolve("other-exp/r2@2") == ids["steps"][2]


def test_mv_refuses_a_taken_step_name_and_changes_nothing(
    trained: tuple[Path, Any], cli: Any
) -> None:
    db, _ids = trained
    with Store(db) as store:
        store.rename("exp/other", "s@1")  # the name exp/r's step 1 would take
    before = snapshot(db)
    bad = cli("mv", "exp/r", "s")
    assert bad.exit_code == 1 and "exp/s@1 exists" in bad.stderr, bad.output
    assert snapshot(db) == before
    with Store(db) as store, pytest.raises(RunExists, match="exp/s@1"):
        store.rename("exp/r", "s")
