"""An export killed at any point is finished by the next one: real processes are killed with
SIGKILL at each step of the exporter (``EVALSTORE_FAULT=export:<step>:<n>``) and at moments
spread over an export's work; the folder they leave is always an export of complete runs,
and the re-run writes what a clean export writes (the same manifest, the same tables). A
folder evalstore did not write is refused and left as it was; a path that cannot hold an
export is one line and exit code 1."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import export_lists, unwritable

from evalstore import Store
from evalstore.errors import EvalstoreError
from evalstore.scale.export import export_runs
from evalstore.scale.importer import import_runs

LOCK = ".evalstore-export.lock"
SLOW = pytest.mark.slow


def _keypoints(store: Store) -> None:
    rng = np.random.default_rng(3)
    pair = np.repeat(["p1", "p2"], 40)
    x0, y0 = rng.uniform(0, 100, pair.size), rng.uniform(0, 100, pair.size)
    eye = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    names = [f"h{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3)]
    store.ingest_keypoints(
        {"pair_id": pair, "x0": x0, "y0": y0, "x1": x0 + 1.0, "y1": y0 - 1.0},
        run="kp/m",
        pairs={"pair_id": ["p1", "p2"], **{n: [v, v] for n, v in zip(names, eye, strict=True)}},
        git_commit=None,
    )


def _contents(folder: Path) -> dict[str, Any]:
    """Every file of an export but the lock: the manifest without its export times, each
    Parquet file as its table (columns, types, rows). Rows are compared in a sorted order:
    DuckDB may hand a run's rows of two row groups of the store over in either order."""
    out: dict[str, Any] = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        if path.is_dir() or rel == LOCK:
            continue
        if rel == "manifest.json":
            manifest = json.loads(path.read_text())
            for entry in manifest["runs"]:
                del entry["exported_at"]
            out[rel] = manifest
        elif path.suffix == ".parquet":
            table = pq.read_table(path)
            flat = [f.name for f in table.schema if not pa.types.is_nested(f.type)]
            out[rel] = table.sort_by([(c, "ascending") for c in flat])
        else:
            out[rel] = path.read_bytes()
    return out


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``old``: a store and ``old_export`` its export; ``new``: the same store later (a run
    with more rows, a run ingested again under a new id) and ``clean`` its clean export."""
    base = tmp_path_factory.mktemp("recovery")
    old, new = base / "old.duckdb", base / "new.duckdb"
    with Store(old) as store:
        for i in range(3):
            store.ingest(
                export_lists(8, 30, seed=i), task="retrieval", run=f"e/r{i}", git_commit=None
            )
        _keypoints(store)
        store.ingest_outcomes(
            {"group_id": ["g"], "tp": [1], "fp": [2], "fn": [3]}, run="out/o", git_commit=None
        )
        export_runs(store, base / "old_export")  # the keypoint estimates are kept from here on
    shutil.copy(old, new)  # the same store (same store id), then changed
    with Store(new) as store:
        store.ingest(export_lists(4, 6, seed=9), task="classification", run="e/r1", append=True)
        store.ingest_outcomes(
            {"group_id": ["g", "h"], "tp": [0, 4], "fp": [1, 1], "fn": [0, 2]},
            run="out/o",
            replace=True,
        )
    with Store(new, read_only=True) as store:  # as the exports under test read it
        export_runs(store, base / "clean")
    return {"new": new, "old_export": base / "old_export", "clean": base / "clean"}


def _export_cmd(folder: Path, db: Path) -> list[str]:
    return [sys.executable, "-m", "evalstore", "export", "--to", str(folder), "--db", str(db)]


def _check_killed_folder(folder: Path, work: Path, runs_before: set[str]) -> set[str]:
    """What a killed export leaves is an export of complete runs: a copy imports without
    error. Returns the runs it holds."""
    copy = work / "copy"
    shutil.copytree(folder, copy, symlinks=True)
    with Store(work / "check.duckdb") as target:
        names = set(import_runs(target, copy))
    assert names >= runs_before  # a run of the earlier export never disappears
    shutil.rmtree(copy)
    (work / "check.duckdb").unlink()
    return names


# Each step of the exporter (layout.py's docstring) at its first and at a later time, into a
# new folder and into an older export (which has its manifest: no "manifest" step). The fast
# loop runs each step's first time into a new folder, and the swap's steps into an older one.
_NEW, _OLDER = "a new folder", "an older export"
_FIRST = [("manifest", 1), ("partition", 1), ("journal", 1), ("rename", 1), ("swap", 1)]
_FIRST += [("run", 2)]
_LATER = [("partition", 5), ("partition", 14), ("journal", 5), ("rename", 8), ("swap", 5)]
_LATER += [("run", 5)]
_FAST = {(_NEW, step, n) for step, n in _FIRST} | {(_OLDER, "rename", 1), (_OLDER, "swap", 1)}
POINTS = [
    (into, step, n) if (into, step, n) in _FAST else pytest.param(into, step, n, marks=SLOW)
    for step, n in _FIRST + _LATER
    for into in (_NEW, _OLDER)
    if not (step == "manifest" and into == _OLDER)
]


@pytest.mark.slow  # real processes
@pytest.mark.parametrize(("into", "step", "n"), POINTS)
def test_an_export_killed_at_a_step_is_finished_by_the_rerun(
    stores: dict[str, Path], tmp_path: Path, into: str, step: str, n: int
) -> None:
    folder = tmp_path / "export"
    before: set[str] = set()
    if into == _OLDER:
        shutil.copytree(stores["old_export"], folder)
        before = {"e/r0", "e/r1", "e/r2", "kp/m"}  # out/o's old id goes when the new one comes
    env = {**os.environ, "EVALSTORE_FAULT": f"export:{step}:{n}"}
    killed = subprocess.run(
        _export_cmd(folder, stores["new"]), env=env, capture_output=True, text=True
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr  # the step was reached
    held = _check_killed_folder(folder, tmp_path, before)
    if not (step == "run" and n == 5):  # killed before its last run was in place
        assert _contents(folder) != _contents(stores["clean"]), held
    with Store(stores["new"], read_only=True) as store:  # the re-run
        export_runs(store, folder)
    assert _contents(folder) == _contents(stores["clean"])
    assert [p.name for p in folder.rglob(".*")] == [LOCK]  # no staging folder, journal, tmp


@pytest.mark.slow  # real processes
def test_a_fault_point_past_the_steps_last_time_never_fires(
    stores: dict[str, Path], tmp_path: Path
) -> None:
    """A point past the last time a step is reached never fires: the export completes."""
    env = {**os.environ, "EVALSTORE_FAULT": "export:journal:6"}  # 5 runs, 5 journals
    done = subprocess.run(
        _export_cmd(tmp_path / "export", stores["new"]), env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert _contents(tmp_path / "export") == _contents(stores["clean"])


def _start_export(folder: Path, db: Path) -> tuple[subprocess.Popen[bytes], float]:
    """An export process, returned once it has written its manifest (when its work begins),
    with the time of that moment."""
    proc = subprocess.Popen(_export_cmd(folder, db), stderr=subprocess.DEVNULL)
    while not (folder / "manifest.json").exists() and proc.poll() is None:
        time.sleep(0.002)
    return proc, time.monotonic()


@pytest.mark.slow  # six real kills, each followed by an import of what is left and a re-run
def test_exports_killed_at_moments_across_their_work_are_finished_by_the_rerun(
    tmp_path: Path,
) -> None:
    """SIGKILL at six moments spread over the work of an export of 12 runs of 24,000 rows:
    each folder left imports, and each re-run (a process, as the user runs it) writes what
    the clean export wrote."""
    db = tmp_path / "big.duckdb"
    with Store(db) as store:
        for i in range(12):
            store.ingest(
                export_lists(24, 1000, seed=i), task="retrieval", run=f"e/r{i}", git_commit=None
            )
    proc, started = _start_export(tmp_path / "clean", db)
    assert proc.wait(timeout=60) == 0
    work = time.monotonic() - started
    clean = _contents(tmp_path / "clean")
    partial = 0
    for kill in range(6):
        folder = tmp_path / f"export-{kill}"
        proc, _ = _start_export(folder, db)
        time.sleep(work * (kill + 0.5) / 6)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        held = _check_killed_folder(folder, tmp_path, set())
        partial += proc.returncode == -signal.SIGKILL and len(held) < 12
        rerun = subprocess.run(_export_cmd(folder, db), capture_output=True, text=True)
        assert rerun.returncode == 0, rerun.stderr
        assert _contents(folder) == clean
    assert partial >= 3, partial  # most kills landed inside the work


# -- folders that are not evalstore's -----------------------------------------------------------


FOREIGN = "not empty and holds no evalstore export"


@pytest.mark.parametrize(
    ("mine", "message"),
    [
        ({"notes.txt": "mine"}, FOREIGN),
        ({"scores/notes.txt": "mine"}, FOREIGN),  # a table's name, not evalstore's contents
        ({"scores/.tmp-run_id=1-0123456789ab/part-0.parquet": "x", "data.csv": "1,2"}, FOREIGN),
        ({".journal-0123456789ab.json": "{}", "a/b.txt": "x"}, "not a journal evalstore wrote"),
    ],
    ids=["a file", "a file under a table name", "staging beside a file", "a journal-named file"],
)
def test_a_folder_evalstore_did_not_write_is_refused_and_left_alone(
    stores: dict[str, Path], tmp_path: Path, mine: dict[str, str], message: str
) -> None:
    folder = tmp_path / "mine"
    for rel, text in mine.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    before = {p: p.is_file() and p.read_bytes() for p in folder.rglob("*")}
    with (
        Store(stores["new"], read_only=True) as store,
        pytest.raises(EvalstoreError, match=message),
    ):
        export_runs(store, folder)
    after = {p: p.is_file() and p.read_bytes() for p in folder.rglob("*")}
    assert after == before  # not even a lock file


@pytest.mark.parametrize("manifest", [False, True], ids=["before its manifest", "after it"])
def test_leftovers_of_a_killed_export_are_recognised_and_removed(
    stores: dict[str, Path], tmp_path: Path, manifest: bool
) -> None:
    """What a killed export leaves (table folders of staging folders alone, half-written
    JSON files) is told by its names: an import reads past it, the next export removes it."""
    folder = tmp_path / "export"
    if manifest:
        shutil.copytree(stores["old_export"], folder)
    staged = folder / "scores" / ".tmp-run_id=1-0123456789ab"
    staged.mkdir(parents=True)
    (staged / "part-0.parquet").write_bytes(b"PAR1")  # a file cut short
    (folder / "groups").mkdir(exist_ok=True)
    (folder / ".manifest.json.0123abcd.tmp").write_text("{")
    (folder / "..journal-0123456789ab.json.0123abcd.tmp").write_text("{")
    if manifest:
        assert _check_killed_folder(folder, tmp_path, set()) == {
            "e/r0",
            "e/r1",
            "e/r2",
            "kp/m",
            "out/o",
        }
    with Store(stores["new"], read_only=True) as store:
        export_runs(store, folder)
    assert _contents(folder) == _contents(stores["clean"])
    assert [p.name for p in folder.rglob(".*")] == [LOCK]


@pytest.mark.slow  # real processes
def test_a_swap_killed_before_any_manifest_is_finished(
    stores: dict[str, Path], tmp_path: Path
) -> None:
    """A folder with a journal, half-swapped partitions and no manifest (what exports wrote
    before a new folder got its manifest first) is recognised by its journal and finished."""
    folder = tmp_path / "export"
    env = {**os.environ, "EVALSTORE_FAULT": "export:rename:2"}
    subprocess.run(_export_cmd(folder, stores["new"]), env=env, capture_output=True)
    (folder / "manifest.json").unlink()
    assert list(folder.glob(".journal-*.json")) and list(folder.glob("*/run_id=*"))
    with Store(stores["new"], read_only=True) as store:
        export_runs(store, folder)
    assert _contents(folder) == _contents(stores["clean"])


def _killed_at_the_swap(stores: dict[str, Path], folder: Path) -> Path:
    """An older export whose re-export was killed in the middle of a swap: its journal."""
    shutil.copytree(stores["old_export"], folder)
    env = {**os.environ, "EVALSTORE_FAULT": "export:rename:1"}
    subprocess.run(_export_cmd(folder, stores["new"]), env=env, capture_output=True)
    (journal,) = folder.glob(".journal-*.json")
    return journal


@pytest.mark.slow  # real processes
@pytest.mark.parametrize("damage", ["moves", "manifest", "tag", "a move"])
def test_a_damaged_journal_is_refused_and_nothing_is_changed(
    stores: dict[str, Path], tmp_path: Path, damage: str
) -> None:
    folder = tmp_path / "export"
    journal = _killed_at_the_swap(stores, folder)
    data = json.loads(journal.read_text())
    if damage == "a move":
        data["moves"][0] = {"table": "../../etc", "run_id": 1, "new": True}
    else:
        del data[damage]
    journal.write_text(json.dumps(data))
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    with (
        Store(stores["new"], read_only=True) as store,
        pytest.raises(EvalstoreError, match="not a journal evalstore wrote") as caught,
    ):
        export_runs(store, folder)
    assert str(journal) in str(caught.value) and "\n" not in str(caught.value)
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before


# -- paths that cannot hold an export ---------------------------------------------------------


def _one_line_error(result: Any) -> str:
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit)  # no other exception: no traceback
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1
    return result.stderr


@pytest.mark.parametrize(
    ("to", "message"),
    [
        ("/proc/self", "/proc/self is not empty and holds no evalstore export"),
        ("{tmp}/file.txt/sub", "cannot create the export folder ({tmp}/file.txt is a file)"),
        ("{tmp}/file.txt/a/b", "cannot create the export folder ({tmp}/file.txt is a file)"),
        ("{tmp}/file.txt", "{tmp}/file.txt is a file; an export needs a folder"),
    ],
)
def test_a_path_that_cannot_hold_an_export_is_one_line(
    cli: Any, store: Store, tmp_path: Path, to: str, message: str
) -> None:
    store.ingest(export_lists(2, 3), task="retrieval", run="e/a", git_commit=None)
    store.close()
    (tmp_path / "file.txt").write_text("mine")
    stderr = _one_line_error(cli("export", "--to", to.format(tmp=tmp_path)))
    assert message.format(tmp=tmp_path) in stderr
    assert (tmp_path / "file.txt").read_text() == "mine"


def test_an_unwritable_folder_is_one_line(cli: Any, store: Store, tmp_path: Path) -> None:
    store.ingest(export_lists(2, 3), task="retrieval", run="e/a", git_commit=None)
    store.close()
    with unwritable(tmp_path / "locked") as folder:
        stderr = _one_line_error(cli("export", "--to", str(folder)))
        assert f"{folder}: cannot write into the folder" in stderr
    # an export there, then the folder made unwritable: the re-export fails on its first write
    assert cli("export", "--to", str(folder)).exit_code == 0
    with unwritable(folder):
        stderr = _one_line_error(cli("export", "--to", str(folder)))
        assert "cannot write the export (" in stderr
    assert cli("export", "--to", str(folder)).exit_code == 0  # writable again: it recovers
    assert [p.name for p in folder.rglob(".*")] == [LOCK]
