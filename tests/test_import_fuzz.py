"""Fuzzed exports: whatever is done to an export folder, `import` either imports it exactly as
it was exported or stops with one line (an ``EvalstoreError``; ``Error: ...`` and exit code 1
from the CLI) and leaves the store as it was: an existing store with the same rows, a new one
not created. Never a traceback.

An export of every kind of data (ranked lists of each task with groups, n_positives, slices
and gains; keypoint matches with pairs; outcomes; tags, params, notes; logged values with and
without steps) is mutated by a seeded RNG, one mutation per case: a byte flipped, a file
truncated, deleted, duplicated into another run's folder or swapped with another, a field of
the manifest edited (deleted, nulled, a number moved, a text changed, a kind changed). The
fast loop runs 20 cases, the slow one 500 (in-process, as the CLI calls the library) and a
few through the real CLI.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from conftest import export_lists, snapshot

from evalstore import Store
from evalstore.errors import EvalstoreError
from evalstore.scale.export import export_runs
from evalstore.scale.importer import import_runs
from evalstore.store.facade import write_store

# -- the export and what importing it gives -----------------------------------------------------


def _fill(store: Store) -> None:
    groups = pl.DataFrame(
        {"group_id": [0, 1, 2], "n_positives": [5, None, 2], "sequence": ["a", "b", None]}
    )
    store.ingest(
        export_lists(3, 4, seed=1),
        task="retrieval",
        run="exp/ranked",
        groups=groups,
        params={"lr": 0.1, "seed": 3},
        tags=["base"],
        notes="a note",
        git_commit=None,
    )
    store.ingest(
        {
            "item_id": ["x/1", "x/2", "x/3", "x/4"],
            "score": np.array([1.0, -0.0, 0.5, -np.inf]),
            "gain": [2.0, 0.0, 1.0, 0.0],
        },
        task="verification",
        run="exp/graded",
        git_commit=None,
    )
    store.ingest_keypoints(
        {
            "pair_id": ["p1", "p1", "p2"],
            "x0": [0.0, 1.0, 2.0],
            "y0": [0.0, 1.0, 2.0],
            "x1": [1.0, 2.0, 3.5],
            "y1": [1.0, 2.0, 3.0],
            "score": [0.5, 0.25, 1.0],
        },
        run="kp/m",
        pairs={
            "pair_id": ["p1", "p2"],
            **{f"h{i}{j}": [float(i == j)] * 2 for i in (1, 2, 3) for j in (1, 2, 3)},
        },
        git_commit=None,
    )
    store.ingest_outcomes(
        {"group_id": ["g1", "g2"], "tp": [3, 0], "fp": [1, 2], "fn": [0, 1]},
        run="out/o",
        git_commit=None,
    )
    for step, loss in enumerate([2.0, 1.0, 0.5]):
        store.log_metric("exp/ranked", "train_loss", loss, step=step)
    store.log_metric("kp/m", "wall_seconds", 3.25)


def _digest(db: Path) -> str:
    """A hash of every row of every table, floats by their repr (-0.0 is not 0.0): equal
    digests = the same rows. A new store's identity and migration times are left out."""
    tables = snapshot(db)
    tables.pop("store_info", None)
    tables["schema_version"] = [r[:1] for r in tables.get("schema_version", [])]
    return hashlib.sha256(repr(sorted(tables.items())).encode()).hexdigest()


class Fixture:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.pristine = root / "pristine"
        with Store(root / "src.duckdb") as store:
            _fill(store)
            export_runs(store, self.pristine)
        self.base = root / "base.duckdb"  # an existing store the imports go into
        with Store(self.base) as store:
            store.ingest(export_lists(1, 3), task="retrieval", run="mine/kept", git_commit=None)
        self.base_bytes = self.base.read_bytes()
        self.base_digest = _digest(self.base)
        self.new_db = root / "imported-new.duckdb"
        write_store(self.new_db, lambda s: import_runs(s, self.pristine))
        self.imported_new = _digest(self.new_db)
        self.new_db.unlink()
        existing = root / "imported-existing.duckdb"
        existing.write_bytes(self.base_bytes)
        with Store(existing) as store:
            import_runs(store, self.pristine)
        self.imported_existing = _digest(existing)
        self.files = sorted(
            p.relative_to(self.pristine) for p in self.pristine.rglob("*") if p.is_file()
        )
        self.files = [f for f in self.files if not f.name.startswith(".")]  # not the lock


@pytest.fixture(scope="module")
def fixture(tmp_path_factory: pytest.TempPathFactory) -> Fixture:
    return Fixture(tmp_path_factory.mktemp("import-fuzz"))


# -- mutations ----------------------------------------------------------------------------------


def _flip(rng: random.Random, folder: Path, files: list[Path]) -> str:
    path = folder / rng.choice(files)
    data = bytearray(path.read_bytes())
    at = rng.randrange(len(data))
    data[at] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(data))
    return f"flip {path.relative_to(folder)}@{at}"


def _truncate(rng: random.Random, folder: Path, files: list[Path]) -> str:
    path = folder / rng.choice(files)
    data = path.read_bytes()
    keep = rng.randrange(len(data))
    path.write_bytes(data[:keep])
    return f"truncate {path.relative_to(folder)} to {keep}"


def _delete(rng: random.Random, folder: Path, files: list[Path]) -> str:
    path = folder / rng.choice(files)
    path.unlink()
    return f"delete {path.relative_to(folder)}"


def _duplicate(rng: random.Random, folder: Path, files: list[Path]) -> str:
    """A partition copied over another run's file of its table, or into a new run's folder."""
    parts = [f for f in files if f.name == "part-0.parquet"]
    source = rng.choice(parts)
    others = [f for f in parts if f.parts[0] == source.parts[0] and f != source]
    if others and rng.random() < 0.5:
        target = folder / rng.choice(others)
    else:
        target = folder / source.parts[0] / "run_id=99" / source.name
        target.parent.mkdir()
    shutil.copyfile(folder / source, target)
    return f"duplicate {source} -> {target.relative_to(folder)}"


def _swap(rng: random.Random, folder: Path, files: list[Path]) -> str:
    a, b = rng.sample(files, 2)
    data = (folder / a).read_bytes()
    (folder / a).write_bytes((folder / b).read_bytes())
    (folder / b).write_bytes(data)
    return f"swap {a} {b}"


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path of a JSON value (containers and leaves)."""
    out = [path]
    if isinstance(value, dict):
        for key, sub in value.items():
            out += _leaves(sub, (*path, key))
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            out += _leaves(sub, (*path, i))
    return out


def _edited(rng: random.Random, value: Any) -> Any:
    if isinstance(value, bool):
        return rng.choice([not value, None, int(value)])
    if isinstance(value, int):
        return rng.choice([value + 1, value - 1, -value, 0, 2**63, str(value), float(value)])
    if isinstance(value, float):
        return rng.choice([value + 1, -value, None, str(value)])
    if isinstance(value, str):
        cut = rng.randrange(len(value) + 1)
        return rng.choice(
            [value[:cut], value + "x", value.upper(), value[::-1], "", 1, None, [value]]
        )
    if isinstance(value, list):
        return rng.choice([value[:-1], [*value, *value[-1:]], value[::-1], {}, None])
    return rng.choice([{}, [], None, "x"])


def _edit_manifest(rng: random.Random, folder: Path, files: list[Path]) -> str:
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text())
    where = rng.choice(_leaves(manifest)[1:])
    parent = manifest
    for key in where[:-1]:
        parent = parent[key]
    if rng.random() < 0.25:
        del parent[where[-1]]
        what = "delete"
    else:
        parent[where[-1]] = _edited(rng, parent[where[-1]])
        what = f"set {parent[where[-1]]!r:.40}"
    path.write_text(json.dumps(manifest))
    return f"manifest {'/'.join(map(str, where))}: {what}"


MUTATIONS: list[Callable[[random.Random, Path, list[Path]], str]] = [
    _flip,
    _flip,
    _truncate,
    _delete,
    _duplicate,
    _swap,
    _edit_manifest,
    _edit_manifest,
]


# -- the cases ----------------------------------------------------------------------------------


def _one_case(fixture: Fixture, seed: int, work: Path) -> str:
    """Mutate a copy of the export and import it, into a new store on even seeds and into
    the existing one on odd ones; returns how it ended. Fails the test on anything but an
    exact import or one line with the store unchanged."""
    rng = random.Random(seed)
    folder = work / "export"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(fixture.pristine, folder)
    what = rng.choice(MUTATIONS)(rng, folder, fixture.files)
    new = seed % 2 == 0
    db = work / "new.duckdb" if new else work / "existing.duckdb"
    if not new:
        db.write_bytes(fixture.base_bytes)
    try:
        if new:
            write_store(db, lambda s: import_runs(s, folder))
        else:
            with Store(db) as store:
                import_runs(store, folder)
    except EvalstoreError as exc:
        text = str(exc)
        assert "\n" not in text and "Traceback" not in text, f"seed {seed} ({what}): {text!r}"
        if new:
            assert not db.exists(), f"seed {seed} ({what}): a store was left at {db}"
        else:
            assert _digest(db) == fixture.base_digest, f"seed {seed} ({what}): store changed"
        ended = "refused"
    else:
        want = fixture.imported_new if new else fixture.imported_existing
        assert _digest(db) == want, f"seed {seed} ({what}): imported, but not as exported"
        ended = "imported"
    db.unlink(missing_ok=True)
    return ended


def _run_cases(fixture: Fixture, seeds: range, work: Path) -> dict[str, int]:
    ended = {"refused": 0, "imported": 0}
    for seed in seeds:
        ended[_one_case(fixture, seed, work)] += 1
    return ended


@pytest.mark.slow  # fuzzing: twenty mutated exports, about 4 s
def test_twenty_mutated_exports_import_exactly_or_are_one_line(
    fixture: Fixture, tmp_path: Path
) -> None:
    ended = _run_cases(fixture, range(20), tmp_path)
    assert ended["refused"] >= 10, ended  # most mutations damage the export


@pytest.mark.slow  # 500 imports, about a minute
def test_five_hundred_mutated_exports_import_exactly_or_are_one_line(
    fixture: Fixture, tmp_path: Path
) -> None:
    ended = _run_cases(fixture, range(1000, 1500), tmp_path)
    assert ended["refused"] >= 300, ended


@pytest.mark.slow  # real processes
@pytest.mark.parametrize("seed", [2, 4, 6, 8, 10, 12])
def test_mutated_exports_through_the_cli_are_one_line(
    fixture: Fixture, tmp_path: Path, seed: int
) -> None:
    """The same, through `evalstore import` into a new store: exit 0 and the export's rows,
    or exit 1, one ``Error:`` line and no store."""
    rng = random.Random(seed)
    folder = tmp_path / "export"
    shutil.copytree(fixture.pristine, folder)
    what = rng.choice(MUTATIONS)(rng, folder, fixture.files)
    db = tmp_path / "new.duckdb"
    result = subprocess.run(
        [sys.executable, "-m", "evalstore", "import", str(folder), "--db", str(db)],
        capture_output=True,
        text=True,
    )
    assert "Traceback" not in result.stderr, (what, result.stderr)
    if result.returncode == 0:
        assert _digest(db) == fixture.imported_new, what
    else:
        assert result.returncode == 1, (what, result.returncode, result.stderr)
        assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, (
            what,
            result.stderr,
        )
        assert not db.exists(), what
