"""The light path of ``evalstore ingest`` (issue 32): Parquet files that DuckDB reads itself
are ingested by a process that imports neither polars nor pandas nor the modules of other
formats; and it writes, prints and refuses exactly what the full path does (the same call
with :func:`evalstore.ingest.parquet_direct.prepare` declining), including the files the
direct path refuses after its insert, which are then streamed on the same staging store."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import snapshot
from typer.testing import CliRunner

import evalstore.ingest.parquet_direct as parquet_direct
import evalstore.store.staging as staging
from evalstore.cli import app


def _table(
    lists: int = 4, items: int = 6, *, seed: int = 0, text: bool = False, f64: bool = False
) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    item = np.tile(np.arange(items, dtype=np.int32), lists)
    return {
        "group_id": np.repeat(np.arange(lists, dtype=np.int32), items),
        "item_id": pa.array([f"d{i}" for i in item]) if text else item,
        "score": rng.standard_normal(lists * items).astype(np.float64 if f64 else np.float32),
        "label": rng.choice(np.array([-1, 0, 1], dtype=np.int8), size=lists * items),
    }


def _write(path: Path, columns: dict[str, Any]) -> Path:
    pq.write_table(pa.table(columns), path)
    return path


#: what differs between any two stores: the store's id, when its schema was made
_MADE = ("store_info", "schema_version")
_STAGE = re.compile(r"\.[^ /]*\.stage")  # the staging file's name holds a pid and a token


def _invoke(
    db: Path, args: list[str], *, light: bool | None, monkeypatch: pytest.MonkeyPatch
) -> Any:
    """``evalstore ingest ARGS --db DB``, by the light path (the full one made to fail), the
    full path (the light one declining) or, ``light`` None, as it comes."""
    with monkeypatch.context() as m:
        if light is None:
            pass
        elif light:

            def full(*_: object, **__: object) -> None:
                raise AssertionError("the full path ran")

            m.setattr(staging, "ingest_files", full)
        else:
            m.setattr(parquet_direct, "prepare", lambda *_, **__: None)
        done = CliRunner().invoke(
            app,
            ["ingest", *args, "--db", str(db), "--created-at", "2026-01-02T03:04:05",
             "--git-commit", "abc", "-v"],
        )  # fmt: skip
    if isinstance(done.exception, AssertionError):
        raise done.exception
    return done.exit_code, done.stdout, _STAGE.sub(".STAGE", done.stderr)


def _same(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    before: list[str] | None = None,
    light: bool | None = True,
) -> tuple[Any, Any]:
    """The light (or ``light``) and full paths' exit code, stdout and stderr, and databases,
    each from a store where ``before`` was ingested first (none if empty)."""
    out, folder = [], Path(tempfile.mkdtemp(dir=tmp_path))
    for name, how in (("light", light), ("full", False)):
        db = folder / f"{name}.duckdb"
        if before:
            _invoke(db, before, light=False, monkeypatch=monkeypatch)
        ran = _invoke(db, args, light=how, monkeypatch=monkeypatch)
        out.append((ran, {k: v for k, v in snapshot(db).items() if k not in _MADE}))
    (light_run, light_db), (full_run, full_db) = out
    assert light_run == full_run
    assert light_db == full_db
    return light_run, light_db


@pytest.mark.parametrize(
    "options",
    [{}, {"text": True}, {"f64": True}, {"text": True, "f64": True}],
    ids=["int", "text", "float64", "text-float64"],
)
def test_the_light_path_writes_and_prints_what_the_full_path_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: dict[str, bool]
) -> None:
    data = _write(tmp_path / "a.parquet", _table(seed=1, **options))
    (code, out, err), db = _same(tmp_path, monkeypatch, [str(data), "-t", "retrieval", "-r", "e/a"])
    assert code == 0 and out.startswith("ingested run e/a (id 1): 24 retrieval rows in 4 list(s)")
    assert "direct path" in err and len(db["groups"]) == 4 and len(db["positive_ranks"]) > 0


def test_one_verification_list_without_group_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table(lists=1, items=50, seed=7, f64=True)
    del table["group_id"]
    data = _write(tmp_path / "v.parquet", table)
    (code, out, err), db = _same(
        tmp_path, monkeypatch, [str(data), "-t", "verification", "-r", "e/v"]
    )
    assert code == 0 and "50 verification rows in 1 list(s)" in out and "direct path" in err
    assert [row[2] for row in db["groups"]] == [None]  # group_id NULL: the one list


def test_light_merges_into_a_store_and_replaces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _write(tmp_path / "first.parquet", _table(seed=2))
    second = _write(tmp_path / "second.parquet", _table(lists=3, seed=3))
    before = [str(first), "-t", "retrieval", "-r", "e/a"]
    (code, out, _), _ = _same(
        tmp_path, monkeypatch, [str(second), "-t", "retrieval", "-r", "e/b"], before
    )
    assert code == 0 and "(id 2)" in out
    (code, out, _), _ = _same(
        tmp_path, monkeypatch, [str(second), "-t", "retrieval", "-r", "e/a", "--replace"], before
    )
    assert code == 0 and out.startswith("replaced run e/a")
    (code, out, err), _ = _same(
        tmp_path, monkeypatch, [str(second), "-t", "retrieval", "-r", "e/a"], before
    )
    assert code == 1 and "run e/a exists" in out + err


def test_options_labels_and_warnings_as_the_full_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table(seed=4)
    table["distance"] = table.pop("score")
    table["score"] = -np.abs(table["distance"])  # a column of our name, not mapped
    table["distance"][3] = np.inf  # not retrieved, once negated
    table["label"] = (table["label"] == 1).astype(np.int8)
    data = _write(tmp_path / "d.parquet", table)
    args = [str(data), "-t", "matching", "-r", "e/d", "-c", "score=distance", "--negate-score"]
    (code, out, _), _ = _same(tmp_path, monkeypatch, [*args, "--labels", "01"])
    assert code == 0 and "1 not retrieved" in out
    (code, out, err), _ = _same(tmp_path, monkeypatch, args)
    assert code == 1 and "--labels 01" in out + err  # 0/1 labels under the default convention
    (code, out, err), _ = _same(tmp_path, monkeypatch, [*args[:-1], "--labels", "01"])
    assert code == 1 and "is +inf" in out + err  # refused by the direct path, then streamed
    table["distance"][3] = 0.5
    data = _write(tmp_path / "d.parquet", table)
    (code, out, err), _ = _same(
        tmp_path, monkeypatch, [*args[:-1], "--labels", "01", "--output-format", "json"]
    )
    assert code == 0 and "Warning: " in err and json.loads(out)[0]["method"] == "direct"


def test_rows_the_direct_path_refuses_are_streamed_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dup = _table(seed=5)
    dup["item_id"] = dup["item_id"].copy()
    dup["item_id"][7] = dup["item_id"][6]  # a duplicate (list, item): refused with its row
    data = _write(tmp_path / "dup.parquet", dup)
    (code, out, err), db = _same(tmp_path, monkeypatch, [str(data), "-t", "retrieval", "-r", "e/a"])
    assert code == 1 and "duplicate" in out + err and not db
    # two lists 5,000 group ids apart: planned direct, refused after the insert (sparse ids),
    # then streamed: the run id the rolled-back attempt took is not given again, as before
    rows = 2_000
    sparse = {
        "group_id": np.where(np.arange(rows) < rows // 2, 0, 5_000).astype(np.int32),
        "item_id": (np.arange(rows) % (rows // 2)).astype(np.int32),
        "score": np.linspace(0, 1, rows, dtype=np.float32),
        "label": np.where(np.arange(rows) % 3 == 0, 1, -1).astype(np.int8),
    }
    data = _write(tmp_path / "sparse.parquet", sparse)
    (code, out, err), db = _same(tmp_path, monkeypatch, [str(data), "-t", "retrieval", "-r", "e/s"])
    assert code == 0 and "(id 2)" in out and "in 2 list(s)" in out and "direct path" in err


@pytest.mark.parametrize(
    ("make", "exit_code"),
    [
        (lambda p: p, 1),  # no such file
        (lambda p: _write(p, {"group_id": [1], "item_id": [1], "score": [0.5]}), 1),  # no label
        (lambda p: _write(p, {**_table(), "gain": np.ones(24)}), 0),  # gains: streamed
    ],
    ids=["missing", "no-label", "gains"],
)
def test_what_the_light_path_declines_the_full_path_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: Any, exit_code: int
) -> None:
    path = make(tmp_path / "x.parquet")
    with monkeypatch.context() as m:
        m.setattr(parquet_direct, "ingest_prepared", lambda *_: pytest.fail("took the light path"))
        (code, out, err), _ = _same(
            tmp_path, monkeypatch, [str(path), "-t", "retrieval", "-r", "e/x"], light=None
        )
    assert code == exit_code and (out + err).count("Error: ") == exit_code


CHILD = """
import json, sys
from evalstore.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exit:
    assert not exit.code, exit.code
loaded = [m for m in sys.modules if m.split(".")[0] in ("polars", "pandas") or m in (
    "evalstore.ingest.sources", "evalstore.ingest.options", "evalstore.ingest.hpatches",
    "evalstore.ingest.stream", "evalstore.metrics.registry", "evalstore.runs.logged",
    "evalstore.store.facade", "pyarrow.compute")]
print(json.dumps(sorted(loaded)))
"""


@pytest.mark.slow  # fresh processes
@pytest.mark.parametrize("ids", ["int", "text"])
def test_the_light_path_loads_no_polars(tmp_path: Path, ids: str) -> None:
    data = _write(tmp_path / "a.parquet", _table(seed=6, text=ids == "text"))
    db = tmp_path / "s.duckdb"
    for run in ("e/a", "e/b"):  # a new store, then a merge into it
        argv = ["ingest", str(data), "-t", "retrieval", "-r", run, "--db", str(db), "-v"]
        done = subprocess.run(
            [sys.executable, "-c", CHILD, *argv], capture_output=True, text=True, check=True
        )
        *printed, loaded = done.stdout.strip().splitlines()
        assert loaded == "[]" and printed[-1].startswith(f"ingested run {run}")
        assert "evalstore: direct path: " in done.stderr
