"""Import checks rows as ingest does and is all or nothing: a tampered export (NaN or +inf
scores, label 7, an item twice in a list, scores of lists without a groups row, bad matches
or counts) is refused with one line and the store is unchanged; an import killed part-way
leaves nothing of it, and the re-run imports every run."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from conftest import snapshot

from evalstore import Store
from evalstore.errors import EvalstoreError
from evalstore.scale.export import export_runs, partition_path
from evalstore.scale.importer import import_runs

PART = "part-0.parquet"


def _lists(n_groups: int, n_items: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "group_id": np.repeat(np.arange(n_groups), n_items),
        "item_id": np.tile(np.arange(n_items), n_groups),
        "score": rng.standard_normal(n_groups * n_items),
        "label": np.resize([1, -1, 0, -1], n_groups * n_items),
    }


@pytest.fixture
def exported(tmp_path: Path) -> Path:
    out = tmp_path / "export"
    with Store(tmp_path / "src.duckdb") as store:
        for i in range(3):
            store.ingest(_lists(3, 5, seed=i), task="retrieval", run=f"exp/r{i}", git_commit=None)
        store.ingest_keypoints(
            {
                "pair_id": ["p1", "p1", "p2"],
                "x0": [0.0, 1.0, 2.0],
                "y0": [0.0, 1.0, 2.0],
                "x1": [1.0, 2.0, 3.0],
                "y1": [1.0, 2.0, 3.0],
            },
            run="kp/m",
            pairs={"pair_id": ["p1", "p2"], **_identity()},
            git_commit=None,
        )
        store.ingest_outcomes(
            {"group_id": ["g"], "tp": [1], "fp": [2], "fn": [3]}, run="out/o", git_commit=None
        )
        export_runs(store, out)
    return out


def _identity() -> dict[str, list[float]]:
    eye = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    names = [f"h{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3)]
    return {n: [v, v] for n, v in zip(names, eye, strict=True)}


def _run_id(out: Path, name: str) -> int:
    manifest = json.loads((out / "manifest.json").read_text())
    return next(int(r["run_id"]) for r in manifest["runs"] if r["name"] == name)


def _tamper(out: Path, table: str, name: str, change: Callable[[pl.DataFrame], pl.DataFrame]):
    """Rewrite one partition and the manifest's row count, as a careful tamperer would."""
    run_id = _run_id(out, name)
    path = partition_path(out, table, run_id) / PART
    frame = change(pl.read_parquet(path))
    frame.write_parquet(path)
    manifest = json.loads((out / "manifest.json").read_text())
    for entry in manifest["runs"]:
        if int(entry["run_id"]) == run_id:
            entry["rows"][table] = frame.height
    (out / "manifest.json").write_text(json.dumps(manifest))


def _first(column: str, value: object) -> Callable[[pl.DataFrame], pl.DataFrame]:
    def change(frame: pl.DataFrame) -> pl.DataFrame:
        first = pl.int_range(pl.len()) == 0
        return frame.with_columns(
            pl.when(first).then(pl.lit(value)).otherwise(pl.col(column)).alias(column)
        )

    return change


CASES: dict[str, tuple[str, str, Callable[[pl.DataFrame], pl.DataFrame], str]] = {
    "nan score": ("scores", "r1", _first("score", float("nan")), r"score nan"),
    "+inf score": ("scores", "r1", _first("score", float("inf")), r"score inf"),
    "label 7": ("scores", "r2", _first("label", 7), r"label 7"),
    "an item twice": (
        "scores",
        "r1",
        lambda f: pl.concat([f, f.head(1).with_columns(pl.col("seq") + 1000)]),
        r"item '0' 2 times in one list",
    ),
    "a list without groups": (
        "scores",
        "r2",
        _first("list_id", 999_999),
        r"has no groups row",
    ),
    "nan coordinate": ("matches", "m", _first("x0", float("nan")), r"NaN or infinite"),
    "a match without its pair": ("matches", "m", _first("pair_id", "p9"), r"without a pairs row"),
    "negative count": ("outcomes", "o", _first("fp", -1), r"negative"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_tampered_export_is_refused_and_the_store_is_unchanged(
    exported: Path, tmp_path: Path, case: str
) -> None:
    table, name, change, message = CASES[case]
    _tamper(exported, table, name, change)
    db = tmp_path / "dst.duckdb"
    with Store(db) as target:
        target.ingest(_lists(2, 2), task="retrieval", run="mine/kept", git_commit=None)
    before = snapshot(db)
    with Store(db) as target, pytest.raises(EvalstoreError, match=message) as caught:
        import_runs(target, exported)
    text = str(caught.value)
    assert "\n" not in text and "nothing was imported" in text
    assert f"{table}/run_id=" in text
    assert snapshot(db) == before  # the runs before the damaged one are not kept either


def test_the_cli_refuses_a_tampered_export_with_one_line(exported: Path, tmp_path: Path) -> None:
    _tamper(exported, "scores", "r0", _first("label", 7))
    db = tmp_path / "new.duckdb"
    result = subprocess.run(
        [sys.executable, "-m", "evalstore", "import", str(exported), "--db", str(db)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("Error: "), result.stderr
    assert "label 7" in result.stderr
    assert not db.exists()


def test_a_sound_export_imports_every_run_at_once(exported: Path, tmp_path: Path) -> None:
    with Store(tmp_path / "dst.duckdb") as target:
        names = import_runs(target, exported)
        assert names == ["exp/r0", "exp/r1", "exp/r2", "kp/m", "out/o"]
        assert target.con.sql("select count(*) from scores").fetchall() == [(45,)]


@pytest.mark.slow
def test_an_import_killed_part_way_leaves_nothing_and_the_rerun_imports_all(
    tmp_path: Path,
) -> None:
    """Real processes killed with SIGKILL at growing delays (at most 6 kills or 60 s): the
    store holds none or all of the 30 runs, never some; the re-run then imports them all."""
    out = tmp_path / "export"
    with Store(tmp_path / "src.duckdb") as store:
        for i in range(30):
            store.ingest(_lists(20, 200, seed=i), task="retrieval", run=f"e/r{i}", git_commit=None)
        export_runs(store, out)
    command = [sys.executable, "-m", "evalstore", "import", str(out)]
    deadline = time.monotonic() + 60
    seen = set()
    for kill in range(6):
        if time.monotonic() > deadline:
            break
        db = tmp_path / f"dst-{kill}.duckdb"
        with Store(db) as target:  # an existing store: the kill happens inside it
            target.ingest(_lists(1, 3), task="retrieval", run="mine/kept", git_commit=None)
        proc = subprocess.Popen([*command, "--db", str(db)], stderr=subprocess.DEVNULL)
        time.sleep(0.8 + 0.4 * kill)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        with Store(db, read_only=True) as target:
            n = target.con.sql("select count(*) from runs").fetchall()[0][0]
        assert n in (1, 31), f"kill {kill}: {n - 1} of 30 runs imported"
        seen.add(n)
        rerun = subprocess.run(
            [*command, "--db", str(db), *(["--replace"] if n == 31 else [])],
            capture_output=True,
            text=True,
        )
        assert rerun.returncode == 0, rerun.stderr
        with Store(db, read_only=True) as target:
            assert target.con.sql("select count(*) from runs").fetchall() == [(31,)]
    assert 1 in seen  # at least one kill landed inside the import


# -- exports of two stores never mix -----------------------------------------------------------


def test_exporting_another_store_into_an_export_folder_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "export"
    with Store(tmp_path / "a.duckdb") as a:
        a.ingest(_lists(2, 3, seed=1), task="retrieval", run="exp/a", git_commit=None)
        export_runs(a, out)
        first_id = a.store_id()
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with Store(tmp_path / "b.duckdb") as b:  # run id 1 too, another run
        b.ingest(_lists(2, 3, seed=2), task="retrieval", run="exp/b", git_commit=None)
        assert b.store_id() != first_id
        with pytest.raises(EvalstoreError, match="export of another store"):
            export_runs(b, out)
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["store_id"] == first_id
    assert [r["name"] for r in manifest["runs"]] == ["a"]
    result = subprocess.run(
        [sys.executable, "-m", "evalstore", "export", "--to", str(out), "--db", str(b.path)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    # the same store again: its runs are added and re-exported runs replaced, as before
    with Store(tmp_path / "a.duckdb") as a:
        a.ingest(_lists(1, 2), task="retrieval", run="exp/c", git_commit=None)
        export_runs(a, out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert [r["name"] for r in manifest["runs"]] == ["a", "c"]


def test_an_export_without_a_store_id_is_checked_by_run_names(tmp_path: Path) -> None:
    out = tmp_path / "export"
    with Store(tmp_path / "a.duckdb") as a:
        a.ingest(_lists(2, 3, seed=1), task="retrieval", run="exp/a", git_commit=None)
        export_runs(a, out)
    manifest = json.loads((out / "manifest.json").read_text())
    del manifest["store_id"]  # written before stores had an identity
    (out / "manifest.json").write_text(json.dumps(manifest))
    with Store(tmp_path / "b.duckdb") as b:
        b.ingest(_lists(2, 3, seed=2), task="retrieval", run="exp/b", git_commit=None)
        with pytest.raises(EvalstoreError, match="run id 1 as exp/a, which is exp/b"):
            export_runs(b, out)
    with Store(tmp_path / "a.duckdb") as a:
        export_runs(a, out)  # its own old export: taken over, now with the store id
        assert json.loads((out / "manifest.json").read_text())["store_id"] == a.store_id()


def test_every_store_draws_its_own_identity(tmp_path: Path) -> None:
    ids = set()
    for i in range(3):
        with Store(tmp_path / f"s{i}.duckdb") as store:
            ids.add(store.store_id())
    assert len(ids) == 3


def test_an_import_bringing_a_param_name_in_another_case_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "export"
    with Store(tmp_path / "a.duckdb") as a:
        a.ingest(_lists(1, 3), task="retrieval", run="exp/a", params={"LR": 1}, git_commit=None)
        export_runs(a, out)
    db = tmp_path / "b.duckdb"
    with Store(db) as b:
        b.ingest(_lists(1, 3), task="retrieval", run="exp/b", params={"lr": 2}, git_commit=None)
    before = snapshot(db)
    with Store(db) as b, pytest.raises(EvalstoreError, match="'LR' and 'lr' differ only in case"):
        import_runs(b, out)
    assert snapshot(db) == before
