"""Export and import of training runs: run_state and run_steps travel with their runs. A run
and its step runs exported together come back linked (under their new ids); a step run
imported without its run is a plain run; a run replaced on import goes with its step runs."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import ranked
from step_runs import training_store

from evalstore import Store
from evalstore.scale.export import export_runs, partition_path, read_manifest
from evalstore.scale.importer import import_runs


@pytest.fixture
def source(db: Path) -> Path:
    with Store(db) as store:
        ids = training_store(store)
        store.con.execute(
            "insert into run_state values (?, 'finished', 42, 'trainer', "
            "'2026-01-01 10:00', '2026-01-01 11:00', '2026-01-01 11:00')",
            [ids["r"]],
        )
    return db


def steps_of(store: Store) -> list[tuple[str, int, str]]:
    return store.con.sql("select run, step, step_run from v_steps order by run, step").fetchall()


def state_of(store: Store) -> list[tuple[object, ...]]:
    found = store.con.sql(
        "select r.experiment || '/' || r.name, s.status, s.pid, s.host, s.started_at, "
        "s.finished_at from run_state s join runs r using (run_id)"
    )
    return found.fetchall()


def test_a_run_and_its_steps_come_back_linked(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "export"
    with Store(source) as store:
        parent = store.resolve("exp/r")
        export_runs(store, out)
        want_steps, want_state = steps_of(store), state_of(store)
    manifest = read_manifest(out)
    assert {"run_state", "run_steps"} <= set(manifest["tables"])
    links = pq.read_table(partition_path(out, "run_steps", parent) / "part-0.parquet")
    assert links.column_names == ["step_run_id", "step"] and links.num_rows == 3
    with Store(tmp_path / "target.duckdb") as store:
        store.ingest(ranked(seed=9), task="retrieval", run="before/x")  # new ids: shifted
        import_runs(store, out)
        assert store.resolve("exp/r") != parent
        assert steps_of(store) == want_steps
        assert state_of(store) == want_state
        assert store.query("ui/step_run_ids").height == 3


def test_a_step_run_without_its_run_is_a_plain_run(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "export"
    with Store(source) as store:
        export_runs(store, out, ["exp/r@1", "exp/other"])
    target = tmp_path / "target.duckdb"
    with Store(target) as store:
        assert sorted(import_runs(store, out)) == ["exp/other", "exp/r@1"]
        assert steps_of(store) == [] and state_of(store) == []
        assert store.resolve("exp/r@1") > 0


def test_a_run_exported_before_its_steps_links_them_once_all_are_there(
    source: Path, tmp_path: Path
) -> None:
    out = tmp_path / "export"
    with Store(source) as store:
        export_runs(store, out, ["exp/r"])  # its links name step runs not exported yet
        parent_only = tmp_path / "parent.duckdb"
        with Store(parent_only) as alone:
            import_runs(alone, out)
            assert steps_of(alone) == [] and len(state_of(alone)) == 1
        export_runs(store, out, ["exp/r@0", "exp/r@2"])
        want = [s for s in steps_of(store) if s[1] != 1]
    with Store(tmp_path / "both.duckdb") as store:
        import_runs(store, out)
        assert steps_of(store) == want


def test_replacing_a_run_on_import_replaces_its_step_runs(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "export"
    with Store(source) as store:
        export_runs(store, out, ["exp/r", "exp/r@0"])
        want = steps_of(store)[:1]
    target = tmp_path / "target.duckdb"
    with Store(target) as store:
        training_store(store)  # exp/r with steps 0, 1, 2 already
        import_runs(store, out, replace=True)
        assert steps_of(store) == want  # the old steps 1 and 2 went with the old run
        names = store.con.sql("select name from runs order by name").fetchall()
        assert [n for (n,) in names] == ["other", "r", "r-s1", "r@0"]
        assert store.con.sql("select count(*) from run_steps").fetchall() == [(1,)]
