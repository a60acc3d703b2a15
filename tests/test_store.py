from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from evalstore import SchemaError, Store, StoreLocked
from evalstore.store import latest_schema_version


def test_new_store_records_every_schema_file(db: Path) -> None:
    with Store(db) as store:
        versions = store.con.execute("select version from schema_version order by 1").fetchall()
    assert [v[0] for v in versions] == list(range(1, latest_schema_version() + 1))


def test_reopening_applies_nothing_twice(db: Path) -> None:
    Store(db).close()
    with Store(db) as store:
        assert store.schema_version() == latest_schema_version()
        n = store.con.execute("select count(*) from schema_version").fetchone()
    assert n == (latest_schema_version(),)


def test_newer_schema_is_refused(db: Path) -> None:
    Store(db).close()
    con = duckdb.connect(str(db))
    con.execute("insert into schema_version (version, name) values (999, 'future')")
    con.close()
    with pytest.raises(SchemaError, match="schema version 999, newer"):
        Store(db)


def test_foreign_duckdb_file_is_refused(db: Path) -> None:
    con = duckdb.connect(str(db))
    con.execute("create table something (x int)")
    con.close()
    with pytest.raises(SchemaError, match="not an evalstore store"):
        Store(db)


def test_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.duckdb"
    path.write_text("hello, I am text\n" * 100)
    with pytest.raises(SchemaError, match="cannot open"):
        Store(path)


def test_read_only_needs_an_existing_file(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="no evalstore database"):
        Store(tmp_path / "missing.duckdb", read_only=True)


def test_default_path_follows_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALSTORE_DB", str(tmp_path / "env.duckdb"))
    with Store() as store:
        assert store.path == tmp_path / "env.duckdb"
    assert (tmp_path / "env.duckdb").exists()


HOLD = "import duckdb, time; c = duckdb.connect({path!r}); print('held', flush=True); time.sleep(9)"


def test_lock_timeout_names_the_file(db: Path) -> None:
    import subprocess
    import sys

    Store(db).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            HOLD.format(path=str(db)),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(StoreLocked, match=f"{db.name} is locked by process {holder.pid}"):
            Store(db, lock_timeout=0.3)
    finally:
        holder.kill()
        holder.wait()


def test_schema_6_migrates_stored_lists(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store written at schema 5 (text keys only, groups rows for metadata only) opens with
    list ids unique across runs and tasks, a groups row per list, and the same metric values."""
    import numpy as np

    from evalstore import store as store_module
    from evalstore.core.ranking import ap
    from evalstore.evaluate import evaluate

    files = store_module._schema_files()
    monkeypatch.setattr(store_module, "_schema_files", lambda: [f for f in files if f[0] <= 5])
    lists = {"q1": ([3.0, 2.0, 1.0], [1, -1, 1]), "q2": ([0.5, 0.5, 0.1], [-1, 1, 1])}
    with Store(db) as store:
        assert store.schema_version() == 5
        for run_id, name in ((1, "a"), (2, "b")):
            store.con.execute(
                "insert into runs (run_id, experiment, name, created_at) values (?, 'x', ?, now())",
                [run_id, name],
            )
            seq = 0
            for gid, (scores, labels) in lists.items():
                for i, (s, lab) in enumerate(zip(scores, labels, strict=True)):
                    store.con.execute(
                        "insert into scores values (?, 'retrieval', ?, ?, ?, ?, ?)",
                        [run_id, gid, f"i{i}", s, lab, seq],
                    )
                    seq += 1
            store.con.execute(
                "insert into scores values (?, 'verification', null, 'p', 1.0, 1, ?)", [run_id, seq]
            )
        store.con.execute(  # an override: q2 of run a has 4 positives, 2 of them not retrieved
            "insert into groups (run_id, task, group_id, n_positives, slices) "
            "values (1, 'retrieval', 'q2', 4, map(['split'], ['test']))"
        )
    monkeypatch.setattr(store_module, "_schema_files", lambda: files)
    with Store(db) as store:
        assert store.schema_version() == latest_schema_version()
        rows = store.con.execute(
            "select run_id, cast(task as varchar), group_id, list_id, n_positives, slices "
            "from groups order by run_id, task, group_id"
        ).fetchall()
        assert len(rows) == 6 and len({r[3] for r in rows}) == 6  # a list id per list
        meta = next(r for r in rows if r[:3] == (1, "retrieval", "q2"))
        assert meta[4:] == (4, {"split": "test"})
        mismatch = store.con.execute(
            "select count(*) from scores s join groups g on g.list_id = s.list_id "
            "where g.run_id <> s.run_id or g.task <> s.task "
            "or g.group_id is distinct from s.group_id"
        ).fetchone()
        assert mismatch == (0,)
        got = evaluate(store, ["x/a", "x/b"], metrics=["ap"], by=["query"])
        values = {(r["run"], r["slice"]): r["value"] for r in got.iter_rows(named=True)}
    for run in ("x/a", "x/b"):
        for gid, (scores, labels) in lists.items():
            n_pos = 4 if (run, gid) == ("x/a", "q2") else None
            want = ap(np.array(scores), np.array(labels), n_positives=n_pos)
            assert values[(run, f"query={gid}")] == pytest.approx(want, rel=1e-12)
