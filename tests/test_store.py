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
