"""Run parameter keys are data: any key round-trips exactly through ingest, v_params, v_runs
(one column ``param_<key>``), ``runs``/``show`` and the Python API, or is refused at ingest
with one line naming it. The views used to look values up through JSON paths built from the
keys, which read a key with a backslash as NULL and failed on one ending in a backslash."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import ranked, snapshot

from evalstore import InvalidInput, Store
from evalstore.db import schema as schema_module
from evalstore.db.queries import quote_name
from evalstore.db.schema import latest_schema_version
from evalstore.ingest import written as written_module

# key -> (the value as typed after -p KEY=, the stored JSON value, the value in v_runs)
PARAMS: dict[str, tuple[str, Any, Any]] = {
    "a\\b": ("1", 1, 1.0),
    'a\\"b': ("2.5", 2.5, 2.5),
    "a\\": ("true", True, True),
    'a"b': ('x"y', 'x"y', 'x"y'),
    "a.b": ("[1,2]", [1, 2], "[1,2]"),
    "$x": ("null", None, None),
    "a b": ("two words", "two words", "two words"),
    "é☃😀": ("ünï", "ünï", "ünï"),
    "empty": ("", "", ""),
    "a'b": ("it's", "it's", "it's"),
    "\\": ("back\\slash", "back\\slash", "back\\slash"),
    "x\\\\y": ("3", 3, 3.0),
    "[0]": ("zero", "zero", "zero"),
    "*": ("star", "star", "star"),
    "a\\u0041": ("u", "u", "u"),
    "$": ("dollar", "dollar", "dollar"),
}
STORED = {k: stored for k, (_, stored, _) in PARAMS.items()}


@pytest.fixture
def parquet(tmp_path: Path) -> Path:
    path = tmp_path / "s.parquet"
    pl.DataFrame(ranked()).write_parquet(path)
    return path


def ingest(cli: Any, parquet: Path, run: str, params: dict[str, str]) -> Any:
    args = ["ingest", str(parquet), "--task", "retrieval", "-r", run]
    for key, raw in params.items():
        args += ["-p", f"{key}={raw}"]
    return cli(*args)


def check_views(db: Path, run: str, expected: dict[str, tuple[Any, Any]]) -> None:
    """v_params holds each stored JSON value under its key; v_runs a column param_<key> per
    key, found by its quoted name too, with the typed value."""
    with Store(db, read_only=True) as store:
        rows = store.con.execute(
            "select key, value from v_params where run = ? order by key", [run]
        ).fetchall()
        assert {k: json.loads(v) for k, v in rows} == {k: s for k, (s, _) in expected.items()}
        assert len(rows) == len(expected)
        cur = store.con.execute("select * from v_runs where run = ?", [run])
        names = [d[0] for d in cur.description]
        row = dict(zip(names, cur.fetchone(), strict=True))
        for key, (_, typed) in expected.items():
            assert row["param_" + key] == typed, key
            column = quote_name("param_" + key)
            query = f"select {column} from v_runs where run = ?"  # test-only SQL
            (by_name,) = store.con.execute(query, [run]).fetchone()
            assert by_name == typed, key


def test_every_key_round_trips_through_the_cli(cli: Any, db: Path, parquet: Path) -> None:
    result = ingest(cli, parquet, "exp/a", {k: raw for k, (raw, _, _) in PARAMS.items()})
    assert result.exit_code == 0, result.output
    check_views(db, "exp/a", {k: (s, t) for k, (_, s, t) in PARAMS.items()})

    runs = json.loads(cli("runs", "--format", "json").stdout)
    assert runs[0]["params"] == STORED
    shown = json.loads(cli("show", "exp/a", "--format", "json").stdout)
    assert shown["params"] == STORED
    fields = dict(csv.reader(io.StringIO(cli("show", "exp/a", "--format", "csv").stdout)))
    for key, stored in STORED.items():
        assert json.loads(fields[f"param {key}"]) == stored, key

    got = cli("sql", "select * exclude (params, tags, created_at) from v_runs", "--format", "json")
    assert got.exit_code == 0, got.output
    (row,) = json.loads(got.stdout)
    assert {k[len("param_") :]: v for k, v in row.items() if k.startswith("param_")} == {
        k: t for k, (_, _, t) in PARAMS.items()
    }


def test_every_key_round_trips_through_the_python_api(db: Path, parquet: Path) -> None:
    params = {**STORED, "a=b": 1, "": "no name", " padded ": 2}  # not from a command line
    with Store(db) as store:
        store.ingest(parquet, task="retrieval", run="exp/api", params=params)
        assert json.loads(store.runs()["params"][0]) == params
        assert store.run("exp/api")["params"] == params
    typed = {
        k: (v, float(v) if isinstance(v, int) and not isinstance(v, bool) else v)
        for k, v in params.items()
    }
    typed["a.b"] = ([1, 2], "[1,2]")
    check_views(db, "exp/api", typed)


def test_keys_of_several_runs_share_columns(cli: Any, db: Path, parquet: Path) -> None:
    assert ingest(cli, parquet, "exp/a", {"a\\": "1", "a\\b": "x"}).exit_code == 0
    assert ingest(cli, parquet, "exp/b", {"a\\": "2.5", 'a\\"b': "y"}).exit_code == 0
    check_views(db, "exp/a", {"a\\": (1, 1.0), "a\\b": ("x", "x")})
    check_views(db, "exp/b", {"a\\": (2.5, 2.5), 'a\\"b': ("y", "y")})
    with Store(db, read_only=True) as store:
        cur = store.con.execute("select * from v_runs where run = 'exp/a'")
        names = [d[0] for d in cur.description]
        row = dict(zip(names, cur.fetchone(), strict=True))
    assert [n for n in names if n.startswith("param_")] == [
        "param_a\\",
        'param_a\\"b',
        "param_a\\b",
    ]
    assert row['param_a\\"b'] is None


@pytest.mark.no_store
def test_a_store_of_schema_7_reads_its_keys_after_the_upgrade(
    db: Path, parquet: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = schema_module.migrations()
    monkeypatch.setattr(schema_module, "migrations", lambda: [f for f in files if f[0] <= 7])
    monkeypatch.setattr(written_module, "index_lists", lambda *args: None)  # before schema 12
    with Store(db) as store:
        assert store.schema_version() == 7
        store.ingest(parquet, task="retrieval", run="exp/old", params={"a\\b": 1, "x\\\\y": "s"})
    monkeypatch.undo()
    with Store(db) as store:  # a writable store upgrades; a read-only one changes nothing
        assert store.schema_version() == latest_schema_version()
    check_views(db, "exp/old", {"a\\b": (1, 1.0), "x\\\\y": ("s", "s")})


# -- what cannot round-trip is refused at ingest, with one line naming the key ---------------


def refused(result: Any, *words: str) -> None:
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    for word in words:
        assert word in lines[0], lines[0]


@pytest.mark.no_store
def test_keys_that_differ_only_in_case_are_refused(cli: Any, db: Path, parquet: Path) -> None:
    """DuckDB column names ignore ASCII case: v_runs cannot hold param_lr and param_LR."""
    refused(ingest(cli, parquet, "exp/a", {"lr": "1", "LR": "2"}), "'LR'", "'lr'")
    assert not db.exists() and list(db.parent.glob(f".{db.name}*")) == []

    assert ingest(cli, parquet, "exp/a", {"lr": "1", "é": "x"}).exit_code == 0
    before = snapshot(db)
    refused(ingest(cli, parquet, "exp/b", {"Lr": "2"}), "'Lr'", "'lr'")
    assert snapshot(db) == before
    assert ingest(cli, parquet, "exp/b", {"É": "y"}).exit_code == 0  # not ASCII: distinct
    check_views(db, "exp/b", {"É": ("y", "y")})
    # replacing the one run that holds a key frees its spelling
    assert cli("rm", "exp/b", "--yes").exit_code == 0
    result = cli(
        "ingest", str(parquet), "--task", "retrieval", "-r", "exp/a", "--replace", "-p", "LR=3"
    )
    assert result.exit_code == 0, result.output
    check_views(db, "exp/a", {"LR": (3, 3.0)})


def test_keys_no_column_can_hold_are_refused(db: Path, parquet: Path) -> None:
    Store(db).close()
    before = snapshot(db)
    for key, words in [("a\x00b", "NUL"), ("a\udcffb", "UTF-8"), (1, "text")]:
        with Store(db) as store, pytest.raises(InvalidInput, match=words) as info:
            store.ingest(parquet, task="retrieval", run="exp/a", params={key: 1})
        assert repr(key) in str(info.value) and "\n" not in str(info.value)
        assert snapshot(db) == before


@pytest.mark.no_store
def test_a_key_from_bytes_that_are_not_utf8_is_refused(cli: Any, db: Path, parquet: Path) -> None:
    refused(ingest(cli, parquet, "exp/a", {"a\udcffb": "1"}), "UTF-8", repr("a\udcffb"))
    assert not db.exists()
