"""The sandbox of users' SQL (``evalstore sql``, dashboard specs' ``sql``): every way out we
know of fails with one line, exit 1, and leaves the store and every other file as they were."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest
from conftest import ranked, snapshot

from evalstore import InvalidInput, Store, sandbox

#: (name, query) pairs, each of which must be refused; {other}, {hard}, {out} are paths
ESCAPES = {
    "attach other read-write, then delete": (
        "attach '{other}' as o (read_write); delete from o.t"
    ),
    "attach other read-write": "attach '{other}' as o (read_write)",
    "attach the store by a hard link, then delete": (
        "attach '{hard}' as h; delete from h.runs"
    ),
    "attach the store by a hard link": "attach '{hard}' as h",
    "delete from runs": "delete from runs",
    "copy to a file": "copy (select * from runs) to '{out}/copy.csv'",
    "export database": "export database '{out}/export'",
    "read_csv": "select * from read_csv('/etc/passwd')",
    "read_text": "select * from read_text('/etc/passwd')",
    "read_blob": "select * from read_blob('/etc/passwd')",
    "glob": "select * from glob('/root/*')",
    "call read_csv": "call read_csv('/etc/passwd')",
    "sniff_csv": "select * from sniff_csv('/etc/passwd')",
    "a URL": "select * from read_json_auto('https://example.com/x.json')",
    "set extension_directory": "set extension_directory = '{out}/ext'",
    "set custom_extension_repository": "set custom_extension_repository = 'http://x'",
    "install": "install httpfs",
    "load": "load httpfs",
    "reset external access": "reset enable_external_access",
    "pragma": "pragma enable_profiling",
    "several statements": "select 1; select 2",
    "a select, then a delete": "select 1; delete from runs",
    "create a table": "create table t as select 1",
    "a macro": "create macro m() as 1",
}

MESSAGES = (
    "only a read-only query runs here",
    "one statement at a time",
    "may not read",
)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def setting(tmp_path: Path, store: Store, db: Path) -> dict[str, Path]:
    store.ingest(ranked(), run="e/a", task="retrieval", git_commit=None)
    store.close()
    other = tmp_path / "other.duckdb"
    con = duckdb.connect(str(other))
    con.execute("create table t as select 1 as a")
    con.close()
    hard = tmp_path / "hard.duckdb"
    os.link(db, hard)
    out = tmp_path / "out"
    out.mkdir()
    return {"other": other, "hard": hard, "out": out}


def files_of(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): digest(p) for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_sql_refuses_every_way_out(
    cli: Any, db: Path, tmp_path: Path, setting: dict[str, Path], name: str
) -> None:
    query = ESCAPES[name].format(**setting)
    before, files = snapshot(db), files_of(tmp_path)
    result = cli("sql", query)
    assert result.exit_code == 1, (name, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and any(m in lines[0] for m in MESSAGES), (name, result.stderr)
    assert snapshot(db) == before
    assert files_of(tmp_path) == files  # the other database, the link, no file written


@pytest.mark.parametrize(
    "name", ["read_csv", "attach the store by a hard link, then delete", "copy to a file"]
)
def test_dashboard_spec_sql_is_sandboxed(
    cli: Any, db: Path, tmp_path: Path, setting: dict[str, Path], name: str
) -> None:
    query = ESCAPES[name].format(**setting)
    spec = tmp_path / "evil.toml"
    spec.write_text(
        f"title = \"Evil\"\n[[panels]]\ntitle = \"p\"\nkind = \"table\"\nsql = '''{query}'''\n"
    )
    before, files = snapshot(db), files_of(tmp_path)
    pages = str(setting["out"] / "pages")
    result = cli("dashboard", "--spec", str(spec), "--out", pages, "--no-eval")
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "panel 1 ('p')" in lines[0], result.stderr
    assert any(m in lines[0] for m in MESSAGES)
    assert snapshot(db) == before
    # nothing but the (unwritten or partial) pages folder changed
    assert {k: v for k, v in files_of(tmp_path).items() if "pages" not in k} == files


def test_allow_read_opens_one_file_read_only(
    cli: Any, db: Path, tmp_path: Path, setting: dict[str, Path]
) -> None:
    allowed = tmp_path / "allowed.csv"
    allowed.write_text("a,b\n1,2\n3,4\n")
    beside = tmp_path / "beside.csv"
    beside.write_text("a,b\n5,6\n")
    read = cli("sql", f"select sum(a) as s from read_csv('{allowed}')", "--allow-read",
               str(allowed), "--format", "csv")  # fmt: skip
    assert read.exit_code == 0, read.output
    assert read.stdout.strip().splitlines() == ["s", "4"]
    before = digest(allowed)
    for query in (
        f"copy (select 9 as a) to '{allowed}'",
        f"select * from read_csv('{beside}')",
        f"attach '{allowed}' as x",
    ):
        result = cli("sql", query, "--allow-read", str(allowed))
        assert result.exit_code == 1 and len(result.stderr.strip().splitlines()) == 1, query
    assert digest(allowed) == before
    folder = cli("sql", f"select sum(a) as n from read_csv('{tmp_path}/*.csv')",
                 "--allow-read", str(tmp_path), "--format", "csv")  # fmt: skip
    assert folder.exit_code == 0 and folder.stdout.split() == ["n", "9"], folder.output
    missing = cli("sql", "select 1", "--allow-read", str(tmp_path / "nope.csv"))
    assert missing.exit_code == 1 and "--allow-read" in missing.stderr


def test_row_and_time_limits(cli: Any, setting: dict[str, Path]) -> None:
    capped = cli("sql", "select * from range(100)", "--max-rows", "7", "--format", "csv")
    assert capped.exit_code == 0, capped.output
    assert capped.stdout.split()[1:] == [str(i) for i in range(7)]
    assert "the first 7 rows only" in capped.stderr
    whole = cli("sql", "select * from range(7)", "--max-rows", "7", "--format", "csv")
    assert whole.exit_code == 0 and whole.stderr == "" and len(whole.stdout.split()) == 8
    slow = cli("sql", "select count(*) from range(10000000000000)", "--timeout", "0.5")
    assert slow.exit_code == 1
    assert slow.stderr.strip() == "Error: stopped after 0.5 s (--timeout SECONDS to allow longer)"
    after = cli("sql", "select 41 + 1 as x", "--format", "csv")  # a fresh process's state
    assert after.exit_code == 0 and after.stdout.split() == ["x", "42"]


def test_a_sandbox_stays_one(tmp_path: Path) -> None:
    """The lock holds for every later statement of the instance, and a query runs only on a
    locked instance; a query's own writes would be rolled back."""
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(ranked(), run="e/a", task="retrieval", git_commit=None)
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        with pytest.raises(RuntimeError, match="sandboxed"):
            sandbox.run_query(store.con, "select 1")
        sandbox.lock_down(store.con)
        sandbox.lock_down(store.con)  # again: nothing to do
        with pytest.raises(InvalidInput, match="already a sandbox"):
            sandbox.lock_down(store.con, [tmp_path])
        for setting in ("enable_external_access = true", "lock_configuration = false"):
            with pytest.raises(duckdb.Error, match="locked"):
                store.con.execute(f"set {setting}")
        got = sandbox.run_query(store.con, "select count(*) as n from runs where name = $n",
                                {"n": "a"})  # fmt: skip
        assert got.frame.equals(pl.DataFrame({"n": [1]}, schema={"n": pl.Int64}))
        assert not got.truncated
