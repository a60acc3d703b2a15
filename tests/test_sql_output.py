"""Where `evalstore sql` writes and how much it fetches: an --output file is never one the
command reads (the store, its WAL, a file under --allow-read, by any name), and the rows
shown stop at a byte budget as well as a row count, fetched in small batches."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import ranked

from evalstore import Store
from evalstore.db import sandbox


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def stored(db: Path) -> Path:
    with Store(db) as store:
        store.ingest(ranked(), run="e/a", task="retrieval", git_commit=None)
    return db


@pytest.mark.slow_after(4)  # a family of 14 cases: the fast loop runs the first 4
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize(
    "name", ["store", "dot", "symlink", "hardlink", "wal", "allowed", "inside"]
)
def test_output_is_never_a_file_the_command_reads(
    cli: Any, stored: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str, name: str
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    allowed = data / "in.csv"
    allowed.write_text("a\n1\n")
    (tmp_path / "link.duckdb").symlink_to(stored)
    os.link(stored, tmp_path / "hard.duckdb")
    monkeypatch.chdir(tmp_path)
    output = {
        "store": str(stored),
        "dot": f"./{stored.name}",
        "symlink": "link.duckdb",
        "hardlink": "hard.duckdb",
        "wal": f"{stored}.wal",
        "allowed": str(allowed),
        "inside": "data/new.csv",
    }[name]
    before = {p: digest(p) for p in (stored, allowed)}
    result = cli("sql", "select 1 as x", "-f", fmt, "-o", output, "--allow-read", str(data))
    assert result.exit_code == 1, result.output
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"Error: --output {Path(output)}: "), line
    assert "write the result elsewhere" in line
    assert {p: digest(p) for p in (stored, allowed)} == before
    assert not Path(f"{stored}.wal").exists() and not (data / "new.csv").exists()
    with Store(stored, read_only=True) as store:  # still a store, whole
        assert store.sql("select count(*) as n from runs")["n"].to_list() == [1]


def test_output_elsewhere_is_written(cli: Any, stored: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.csv"
    result = cli("sql", "select 1 as x", "-f", "csv", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert out.read_text().split() == ["x", "1"]


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_two_columns_of_one_name_get_a_one_line_error(cli: Any, stored: Path, fmt: str) -> None:
    for query in ("select 1 as a, 2 as a", "select 1.5 as a, [2] as a"):
        result = cli("sql", query, "-f", fmt)
        assert result.exit_code == 1, result.output
        assert "Traceback" not in result.output
        assert "more than one column named 'a'" in result.stderr.strip().splitlines()[-1]


BIG = "select i, repeat('x', 1000000) as s from range(50) t(i)"  # 50 rows of 1 MB


def test_the_screen_stops_at_a_byte_budget_a_file_gets_every_row(
    cli: Any, stored: Path, tmp_path: Path
) -> None:
    shown = cli("sql", BIG, "--format", "csv", "--max-mb", "5")
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert 1 <= len(lines) - 1 <= 5  # about 5 MB of 1 MB rows
    assert "truncated at 5 MB" in shown.stderr and "--max-mb" in shown.stderr
    out = tmp_path / "big.parquet"
    whole = cli("sql", BIG, "-o", str(out), "--max-mb", "5")
    assert whole.exit_code == 0 and "wrote 50 rows" in whole.stderr, whole.output
    small = cli("sql", "select 1 as x", "--format", "csv")
    assert small.exit_code == 0 and small.stderr == ""


def test_run_query_fetches_within_the_budget(stored: Path) -> None:
    with Store(stored, read_only=True) as store:
        sandbox.lock_down(store.con)
        got = sandbox.run_query(store.con, BIG, max_bytes=3_500_000)
        assert got.truncated and got.bytes_cap == 3_500_000
        assert got.frame.height == 3 and got.frame["i"].to_list() == [0, 1, 2]
        assert "truncated at 3.5 MB" in got.note("r", "b")
        one = sandbox.run_query(store.con, BIG, max_bytes=10)  # not even one row
        assert one.truncated and one.frame.height == 0
        rows = sandbox.run_query(store.con, "select * from range(10)", max_rows=4, max_bytes=10**9)
        assert rows.truncated and rows.bytes_cap is None and rows.frame.height == 4
        whole = sandbox.run_query(store.con, "select * from range(10)", max_bytes=10**9)
        assert not whole.truncated and whole.frame.height == 10
