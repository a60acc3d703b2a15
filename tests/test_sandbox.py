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

from evalstore import InvalidInput, Store
from evalstore.db import queries, sandbox

#: (name, query) pairs, each of which must be refused; {other}, {hard}, {out} are paths
ESCAPES = {
    "attach other read-write, then delete": ("attach '{other}' as o (read_write); delete from o.t"),
    "attach other read-write": "attach '{other}' as o (read_write)",
    "attach the store by a hard link, then delete": ("attach '{hard}' as h; delete from h.runs"),
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
    "explain analyze copy": "explain analyze copy (select 1 as a) to '{out}/explained.csv'",
    "explain (options) copy": "explain (format json) copy (select 1 as a) to '{out}/j.csv'",
    "explain analyze, comments between": (
        "explain /* a */ analyze -- b\n copy (select 1 as a) to '{out}/c.csv'"
    ),
    "explain analyze insert": "explain analyze insert into runs select * from runs",
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


@pytest.mark.slow_after(6)  # a family of 28 cases: the fast loop runs the first 6
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


def test_explain_analyze_writes_nothing_under_allow_read(
    cli: Any, db: Path, tmp_path: Path, setting: dict[str, Path]
) -> None:
    """EXPLAIN ANALYZE runs what it explains, and DuckDB lets a query write where
    --allow-read lets it read (allowed_directories and allowed_paths grant writes too): the
    check judges the explained statement, so nothing there is written or overwritten."""
    folder = tmp_path / "data"
    folder.mkdir()
    kept = folder / "kept.csv"
    kept.write_text("a\n1\n")
    before, files = snapshot(db), files_of(tmp_path)
    for query in (
        f"explain analyze copy (select 9 as a) to '{folder}/new.csv'",
        f"explain analyze copy (select 9 as a) to '{kept}' (use_tmp_file false)",
        f"EXPLAIN ANALYZE COPY (SELECT 9 AS a) TO '{folder}/new.parquet' (FORMAT parquet)",
        f"explain (format json) copy (select 9 as a) to '{folder}/new.csv'",
    ):
        for allowed in (folder, kept):
            result = cli("sql", query, "--allow-read", str(allowed))
            assert result.exit_code == 1, (query, result.output)
            [line] = result.stderr.strip().splitlines()
            assert "only a read-only query runs here" in line and "COPY" in line, line
    assert files_of(tmp_path) == files and snapshot(db) == before
    # an EXPLAIN ANALYZE of a query still runs
    fine = cli("sql", f"explain analyze select count(*) from read_csv('{kept}')",
               "--allow-read", str(folder), "--format", "csv")  # fmt: skip
    assert fine.exit_code == 0 and "analyzed_plan" in fine.stdout, fine.output
    spec = tmp_path / "explain.toml"
    spec.write_text(
        'title = "E"\n[[panels]]\ntitle = "p"\nkind = "table"\n'
        f"sql = \"explain analyze copy (select 9 as a) to '{folder}/spec.csv'\"\n"
    )
    files = files_of(tmp_path)
    pages = str(tmp_path / "pages")
    result = cli("dashboard", "--spec", str(spec), "--out", pages, "--no-eval",
                 "--allow-read", str(folder))  # fmt: skip
    assert result.exit_code == 1, result.output
    [line] = result.stderr.strip().splitlines()
    assert "panel 1 ('p')" in line and "only a read-only query runs here" in line, line
    assert {k: v for k, v in files_of(tmp_path).items() if "pages" not in k} == files


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("../../x/q", "unknown query '../../x/q'"),
        ("/abs/path", "unknown query '/abs/path'"),
        ("dashboards/../../x/q", "unknown query"),
        ("{escape}", "unknown query"),  # ../.. from sql/ to the test's own folder
        ("store/insert_run", "query 'store/insert_run': only a read-only query runs here"),
    ],
)
def test_a_spec_query_is_a_read_only_named_query_of_sql(
    cli: Any, db: Path, tmp_path: Path, setting: dict[str, Path], query: str, said: str
) -> None:
    """A spec's ``query`` names a query of sql/ (never a file found by ``..`` or a full
    path), and one that only reads: a named query runs outside the sandbox."""
    outside = tmp_path / "x"
    outside.mkdir()
    (outside / "q.sql").write_text("delete from runs")
    query = query.format(escape=os.path.relpath(outside / "q", queries.sql_dir()))
    spec = tmp_path / "named.toml"
    spec.write_text(f'title = "N"\n[[panels]]\ntitle = "p"\nkind = "table"\nquery = "{query}"\n')
    before = snapshot(db)
    result = cli("dashboard", "--spec", str(spec), "--out", str(tmp_path / "pages"), "--no-eval")
    assert result.exit_code == 1, result.output
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"Error: {spec}: panel 1 ('p'): ") and said in line, line
    assert snapshot(db) == before
