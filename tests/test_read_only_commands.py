"""Commands that read never create a store nor upgrade one. Against a path that does not
exist, each says so in one line and leaves nothing there; against a store of an older
schema, each says which command upgrades it, and the file keeps its bytes and its mtime.
Only commands that write runs create (ingest, import) or upgrade (and say so), and
`evalstore upgrade` upgrades on purpose."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from conftest import ingest_lists

from evalstore import Store
from evalstore.db import schema
from evalstore.errors import EvalstoreError, SchemaError

OLD = 13  # before 014_logged_values.sql: `evalstore sql` upgraded such a store in place
LISTS = {"q1": ([3.0, 2.0], [1, -1]), "q2": ([3.0, 1.0], [-1, 1])}

#: every command that only reads (eval and the comparisons write the metric cache only)
READERS: dict[str, list[str]] = {
    "runs": ["runs"],
    "runs-csv": ["runs", "--format", "csv"],
    "show": ["show", "exp/a"],
    "sql": ["sql", "select 1"],
    "metrics": ["metrics", "--all"],
    "eval": ["eval", "exp/a"],
    "leaderboard": ["leaderboard"],
    "compare": ["compare", "exp/a", "exp/b"],
    "history": ["history", "-m", "map"],
    "groups": ["groups"],
    "diff": ["diff", "exp/a", "exp/b"],
    "check": ["check", "exp/b", "--baseline", "exp/a"],
    "dashboard": ["dashboard", "--out", "{tmp}/pages"],
    "dashboard-changed": ["dashboard", "--changed", "exp/a", "exp/b", "--out", "{tmp}/pages"],
    "export": ["export", "--to", "{tmp}/exported"],
    "ui": ["ui", "--port", "0"],
}


@pytest.fixture(scope="module")
def old_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store written by an evalstore of schema 13, with two runs."""
    path = tmp_path_factory.mktemp("old") / "old.duckdb"
    files = schema.migrations()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(schema, "migrations", lambda: [f for f in files if f[0] <= OLD])
        with Store(path) as store:
            ingest_lists(store, "exp/a", LISTS)
            ingest_lists(store, "exp/b", LISTS)
            assert store.schema_version() == OLD
            store.con.execute("checkpoint")
    return path


def evalstore(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("EVALSTORE_DB", "EVALSTORE_METRICS")}
    return subprocess.run(
        [sys.executable, "-m", "evalstore", *args],
        capture_output=True, text=True, timeout=120, cwd=cwd, env=env,
    )  # fmt: skip


def state(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file under ``folder``: its hash and mtime."""
    return {
        str(p.relative_to(folder)): (
            hashlib.sha256(p.read_bytes()).hexdigest(),
            p.stat().st_mtime_ns,
        )
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def argv(name: str, tmp: Path) -> list[str]:
    return [a.replace("{tmp}", str(tmp)) for a in READERS[name]]


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), done.stderr
    return lines[0]


@pytest.mark.slow  # real processes
@pytest.mark.parametrize("name", list(READERS))
def test_a_reader_creates_no_store(name: str, tmp_path: Path) -> None:
    typo = tmp_path / "typo.duckdb"
    said = one_error_line(evalstore(*argv(name, tmp_path), "--db", str(typo)))
    assert f"no evalstore database at {typo}" in said
    assert not typo.exists() and list(tmp_path.iterdir()) == []  # no file, WAL or folder


@pytest.mark.slow  # real processes
@pytest.mark.parametrize("name", list(READERS))
def test_a_reader_leaves_an_older_store_as_it_is(
    name: str, old_store: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "store"
    folder.mkdir()
    db = folder / "old.duckdb"
    shutil.copy2(old_store, db)
    before = state(folder)
    said = one_error_line(evalstore(*argv(name, tmp_path), "--db", str(db)))
    assert f"{db} has schema version {OLD}, older than this evalstore's" in said
    assert f"`evalstore upgrade --db {db}` upgrades it" in said
    assert state(folder) == before  # same bytes, same mtime, no WAL beside it


@pytest.mark.slow  # real processes
def test_upgrade_upgrades_on_purpose_then_readers_read(old_store: Path, tmp_path: Path) -> None:
    db = tmp_path / "old.duckdb"
    shutil.copy2(old_store, db)
    done = evalstore("upgrade", "--db", str(db))
    assert done.returncode == 0, done.stderr
    latest = schema.latest_schema_version()
    assert done.stdout.strip() == f"{db}: upgraded from schema version {OLD} to {latest}"
    assert done.stderr == ""
    runs = evalstore("runs", "--format", "csv", "--db", str(db))
    assert runs.returncode == 0 and "exp,a" in runs.stdout and "exp,b" in runs.stdout
    again = evalstore("upgrade", "--db", str(db))
    assert again.returncode == 0 and "nothing to do" in again.stdout
    missing = evalstore("upgrade", "--db", str(tmp_path / "typo.duckdb"))
    assert "no evalstore database" in one_error_line(missing)
    assert not (tmp_path / "typo.duckdb").exists()


@pytest.mark.slow  # real processes
def test_a_writer_of_runs_upgrades_and_says_so(old_store: Path, tmp_path: Path) -> None:
    db = tmp_path / "old.duckdb"
    shutil.copy2(old_store, db)
    done = evalstore("tag", "exp/a", "kept", "--db", str(db))
    assert done.returncode == 0, done.stderr
    latest = schema.latest_schema_version()
    assert done.stderr.strip() == f"{db}: upgraded from schema version {OLD} to {latest}"
    with Store(db, read_only=True) as store:
        assert store.schema_version() == latest
        assert store.run("exp/a")["tags"] == ["kept"]


EDITS = [["rm", "exp/a", "--yes"], ["tag", "exp/a", "t"], ["mv", "exp/a", "b"],
         ["set", "exp/a", "--notes", "n"]]  # fmt: skip


@pytest.mark.slow  # real processes
@pytest.mark.parametrize("command", EDITS)
def test_an_edit_of_a_missing_store_creates_nothing(command: list[str], tmp_path: Path) -> None:
    typo = tmp_path / "typo.duckdb"
    assert "no evalstore database" in one_error_line(evalstore(*command, "--db", str(typo)))
    assert list(tmp_path.iterdir()) == []


def test_the_library_refuses_as_the_commands_do(old_store: Path, tmp_path: Path) -> None:
    db = tmp_path / "old.duckdb"
    shutil.copy2(old_store, db)
    before = state(tmp_path)
    with pytest.raises(SchemaError, match="evalstore upgrade"):
        Store(db, read_only=True)
    with pytest.raises(SchemaError, match="evalstore upgrade"):
        Store(db, migrate=False)
    with pytest.raises(EvalstoreError, match="no evalstore database"):
        Store(tmp_path / "new.duckdb", create=False)
    assert state(tmp_path) == before
    empty = tmp_path / "empty.duckdb"
    duckdb.connect(str(empty)).close()  # a DuckDB file with nothing in it
    with pytest.raises(SchemaError, match="empty DuckDB database, not an evalstore store"):
        Store(empty, read_only=True)
    with Store(db) as store:  # the default: writable, upgraded (the Python API as before)
        assert store.upgraded_from == OLD
        assert store.schema_version() == schema.latest_schema_version()


@pytest.mark.slow  # real processes
def test_an_ingest_into_an_older_store_upgrades_it(old_store: Path, tmp_path: Path) -> None:
    db = tmp_path / "old.duckdb"
    shutil.copy2(old_store, db)
    rows = tmp_path / "rows.csv"
    rows.write_text("group_id,item_id,score,label\nq,1,0.9,1\nq,2,0.1,-1\n")
    done = evalstore("ingest", str(rows), "-t", "retrieval", "-r", "exp/c", "--db", str(db))
    assert done.returncode == 0, done.stderr
    assert "upgraded from schema version 13" in done.stderr
    with Store(db, read_only=True) as store:
        assert sorted(store.runs()["name"].to_list()) == ["a", "b", "c"]
