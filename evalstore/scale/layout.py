"""The export folder on disk: its layout, its manifest, the journal of a swap, the lock.

Layout of an export folder ``DIR``::

    DIR/manifest.json                         schema version, tables and columns, runs,
                                              each run's rows and files' SHA-256 per table
    DIR/<table>/run_id=<id>/part-0.parquet    one folder per (table, run), hive-style

``<table>`` is one of :data:`ALL_TABLES`: the raw tables that metrics are computed from
(:data:`TABLES`, what Spark reads), ``logged_values`` (values logged with ``evalstore log``),
a training run's ``run_state`` and ``run_steps`` (:data:`STEP_TABLES`) and a detection run's
boxes (:data:`DETECTION_TABLES`).
Format version 2 (this one) records the SHA-256 of every file it writes; an import checks
each file against it before it reads the file. Version 1 (before checksums and
``logged_values``) is still read: its files cannot be checked for damage, so its import
warns (:mod:`evalstore.scale.checksums`). The detection tables (schema 17) did not change the
format: a table is a folder and a manifest entry like any other, an export without them
(schema 16 and before) imports as it did, and one exported into takes them on (as it takes
any table it lacks). An older evalstore's import refuses the manifest's unknown table rather
than leave rows out; its Spark source reads the tables it knows (it has no detection metric).
The training tables (schema 22) came the same way, and the cameras and pose estimates
(schema 23, :data:`POSE_TABLES`).

Staging folders (``.tmp-*``), folders moved aside (``.old-*``) and journals (``.journal-*``)
start with ``.``, so Spark's partition discovery skips them. :func:`apply_journal` swaps a
run's staged folders into place and :func:`recover` finishes a swap a crash interrupted and
removes what a killed export left: only names of the exact forms evalstore writes, so that a
file of anyone else is never deleted (:func:`is_leftover` tells those names).

Fault injection, for tests: with ``EVALSTORE_FAULT=export:<step>:<n>`` in the environment,
the process kills itself with SIGKILL the ``n``-th time it reaches ``<step>``, one of
``manifest`` (a new folder's first manifest written), ``partition`` (a staged Parquet file
written), ``journal`` (a run's journal written), ``rename`` (one folder of a swap renamed),
``swap`` (a swap's manifest written, the old folders not yet removed), ``run`` (a run's swap
done). See :func:`fault_point`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, TypeGuard

from evalstore.errors import EvalstoreError

__all__ = [
    "ALL_TABLES",
    "BATCH_ROWS",
    "DETECTION_DERIVED",
    "DETECTION_TABLES",
    "FORMAT",
    "FORMAT_VERSION",
    "LOCK",
    "MANIFEST",
    "PART",
    "PARTITION_COLUMN",
    "POSE_TABLES",
    "SPARK_TABLES",
    "STEP_TABLES",
    "TABLES",
    "apply_journal",
    "check_empty",
    "check_manifest",
    "fault_point",
    "is_leftover",
    "journal_path",
    "journals",
    "locked",
    "partition_path",
    "partition_run_id",
    "prepare_folder",
    "read_journal",
    "read_manifest",
    "recover",
    "staging_path",
    "write_json",
]

#: The raw tables, in the order they are written and imported (runs first): what metrics
#: are computed from, and what Spark reads (:mod:`evalstore.scale.sources`). ``scores`` is a
#: view over the row tables of sql/schema/007_lean_rows.sql: an imported run's ranked items
#: go to the leanest one that holds them exactly (see importer.py).
TABLES: tuple[str, ...] = ("runs", "scores", "groups", "pairs", "matches", "outcomes")
#: A detection run's raw rows (sql/schema/017_detections.sql), images and categories before
#: the boxes that name them.
DETECTION_TABLES: tuple[str, ...] = ("det_images", "det_categories", "det_truth", "det_boxes")
#: What the protocols derive from them on first use (evalstore/analysis/det_matching.py), which
#: the detection metrics' SQL reads: exported for Spark (an export makes them first on a
#: writable store), never imported (the importing store derives them again).
DETECTION_DERIVED: tuple[str, ...] = (
    "det_thresholds", "det_positives", "det_matches", "det_matched", "det_tide"
)  # fmt: skip
#: A keypoint run's cameras (sql/schema/023_pose.sql: K0, K1, T_0to1 per pair) and the relative
#: poses estimated from its matches on first use (evalstore/analysis/pose_estimates.py):
#: exported and imported with the run (an import keeps the estimates rather than make them
#: again), read by Spark; exports before schema 23 have neither.
POSE_TABLES: tuple[str, ...] = ("pair_cameras", "pose_estimates")
#: What Spark registers as views: the raw tables, the detection matches and the categories
#: (TIDE's metrics give a row per category of the run), the cameras and pose estimates.
SPARK_TABLES: tuple[str, ...] = (*TABLES, "det_categories", *DETECTION_DERIVED, *POSE_TABLES)
#: A training run's tables (sql/schema/022_training_runs.sql): its ``run_state`` row (a run
#: opened before its rows) and its ``run_steps`` rows (its evaluations at training steps,
#: each held by a step run), exported with the run, the step runs named by their ids in
#: this export. An import links a run to those of its step runs it imports too.
STEP_TABLES: tuple[str, ...] = ("run_state", "run_steps")
#: Every exported table: the raw ones, the values logged with ``evalstore log`` (exports of
#: format version 1 have no logged_values), a training run's state and steps (exports before
#: schema 22 have none), a detection run's rows (exports before schema 17 have none: their
#: runs import without them) and a keypoint run's cameras and pose estimates (schema 23).
ALL_TABLES: tuple[str, ...] = (
    *TABLES, "logged_values", *STEP_TABLES, *DETECTION_TABLES, *DETECTION_DERIVED, *POSE_TABLES
)  # fmt: skip
FORMAT = "evalstore-export"
#: 2: every run's files carry their SHA-256 (``sha256`` of a manifest run), logged_values.
FORMAT_VERSION = 2
MANIFEST = "manifest.json"
PART = "part-0.parquet"
PARTITION_COLUMN = "run_id"
LOCK = ".evalstore-export.lock"
BATCH_ROWS = 1 << 20

_TAG = r"[0-9a-f]{12}"  # an export's tag: uuid4().hex[:12]
_PARTITION = re.compile(rf"{PARTITION_COLUMN}=(0|[1-9][0-9]*)")
_JOURNAL = re.compile(rf"\.journal-({_TAG})\.json")
_STAGED = re.compile(rf"\.(tmp|old)-{PARTITION_COLUMN}=[0-9]+-{_TAG}")  # in a table folder
# write_json's temporary files: ".manifest.json.<hex>.tmp", "..journal-<tag>.json.<hex>.tmp"
_WRITING = re.compile(rf"\.({re.escape(MANIFEST)}|\.journal-{_TAG}\.json)\.[0-9a-f]{{8}}\.tmp")


def partition_path(root: str | os.PathLike[str], table: str, run_id: int) -> Path:
    """``root/<table>/run_id=<id>``: the folder of one run's rows of one table."""
    return Path(root) / table / f"{PARTITION_COLUMN}={int(run_id)}"


def staging_path(root: Path, table: str, run_id: int, tag: str) -> Path:
    """The hidden folder where export ``tag`` writes one run's rows of ``table``."""
    return root / table / f".tmp-{PARTITION_COLUMN}={run_id}-{tag}"


def _old(root: Path, table: str, run_id: int, tag: str) -> Path:
    return root / table / f".old-{PARTITION_COLUMN}={run_id}-{tag}"


def journal_path(root: Path, tag: str) -> Path:
    """The journal of export ``tag``: the folder moves of its swap and the new manifest."""
    return root / f".journal-{tag}.json"


def fault_point(step: str) -> None:
    """Kill the process here when ``EVALSTORE_FAULT`` says so (see the module docstring)."""
    spec = os.environ.get("EVALSTORE_FAULT", "")
    if spec.startswith(f"export:{step}:"):
        _REACHED[step] = _REACHED.get(step, 0) + 1
        if spec == f"export:{step}:{_REACHED[step]}":
            os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))


_REACHED: dict[str, int] = {}


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Write JSON atomically: a temporary file next to it, then a rename."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2, ensure_ascii=False)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def read_manifest(root: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest of an export folder.

    Raises:
        EvalstoreError: no manifest, or not an evalstore export of a format this version reads.
    """
    path = Path(root) / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise EvalstoreError(f"{root}: not an evalstore export (no {MANIFEST})") from None
    except (OSError, ValueError) as exc:
        raise EvalstoreError(f"{path}: cannot read the manifest: {exc}") from None
    return check_manifest(manifest, str(path))


def check_manifest(manifest: Any, where: str) -> dict[str, Any]:
    """Check the format fields of a parsed manifest and return it."""
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise EvalstoreError(f"{where}: not an evalstore export manifest")
    version = manifest.get("format_version")
    if not _is_int(version) or version < 1:
        raise EvalstoreError(f"{where}: export format version {version!r} is not a version")
    if version > FORMAT_VERSION:
        raise EvalstoreError(
            f"{where}: export format version {version!r} is newer than this evalstore reads "
            f"({FORMAT_VERSION}); upgrade evalstore"
        )
    for key in ("schema_version", "tables", "runs"):
        if key not in manifest:
            raise EvalstoreError(f"{where}: the manifest has no {key!r}")
    if not _is_int(manifest["schema_version"]) or manifest["schema_version"] < 1:
        raise EvalstoreError(f"{where}: schema_version {manifest['schema_version']!r} is not one")
    return manifest


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def prepare_folder(root: Path) -> None:
    """Create the export folder ``root`` where missing.

    Raises:
        EvalstoreError: ``root`` is a file, lies under one, or cannot be created.
    """
    if root.is_file():
        raise EvalstoreError(f"{root} is a file; an export needs a folder")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        files = [p for p in root.parents if p.is_file()]
        why = f"{files[0]} is a file" if files else exc.strerror or str(exc)
        raise EvalstoreError(f"{root}: cannot create the export folder ({why})") from None


def check_empty(root: Path) -> None:
    """Refuse a folder without a manifest that holds anything but hidden names and table
    folders of leftovers alone (what an export killed before its manifest can leave).

    Raises:
        EvalstoreError: anything else is there; the message names it.
    """
    foreign = [
        p.name
        for p in sorted(root.iterdir())
        if not p.name.startswith(".")
        and not (
            p.name in ALL_TABLES
            and p.is_dir()
            and not p.is_symlink()
            and all(is_leftover(p, q.name) for q in p.iterdir())
        )
    ]
    if foreign:
        raise EvalstoreError(
            f"{root} is not empty and holds no evalstore export ({foreign[0]}, ...); "
            "export into an empty or new folder"
        )


@contextlib.contextmanager
def locked(root: Path, required: bool = True) -> Iterator[None]:
    """One export or import at a time per folder (advisory lock; a no-op without fcntl).
    ``required=False``: a folder where the lock file cannot be created (read-only) is read
    without the lock."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    try:
        fh = open(root / LOCK, "a+")  # noqa: SIM115 (closed below)
    except OSError as exc:
        if required:
            raise EvalstoreError(
                f"{root}: cannot write into the folder ({exc.strerror or exc})"
            ) from None
        yield
        return
    with fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise EvalstoreError(
                f"{root} is being written by another evalstore export; try again later"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def read_journal(path: Path) -> dict[str, Any]:
    """A journal, checked to be one that :func:`apply_journal` can finish.

    Raises:
        EvalstoreError: unreadable, or without the keys of a journal evalstore writes.
    """

    def bad(what: str) -> EvalstoreError:
        return EvalstoreError(
            f"{path}: not a journal evalstore wrote ({what}); the export is damaged: export "
            "into a new folder"
        )

    try:
        journal = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # written atomically: only a foreign file fails
        raise bad(f"unreadable: {exc}") from None
    if not isinstance(journal, dict):
        raise bad("not a JSON object")
    for key in ("tag", "moves", "manifest"):
        if key not in journal:
            raise bad(f"no {key!r}")
    match = _JOURNAL.fullmatch(path.name)
    if match is None or journal["tag"] != match.group(1):
        raise bad(f"tag {journal['tag']!r} is not the file's")
    if not isinstance(journal["moves"], list):
        raise bad("'moves' is not a list")
    for move in journal["moves"]:
        if not (
            isinstance(move, dict)
            and move.get("table") in ALL_TABLES
            and _is_int(move.get("run_id"))
            and isinstance(move.get("new"), bool)
        ):
            raise bad(f"a move {move!r:.60} is not a table, a run id and whether it is new")
    check_manifest(journal["manifest"], f"{path}: 'manifest'")
    return journal


def apply_journal(root: Path, journal: Mapping[str, Any]) -> None:
    """Swap the staged folders of a journal into place, write its manifest, remove the old
    folders. Every step checks what is already done, so a crashed swap can be re-applied."""
    tag = journal["tag"]
    for move in journal["moves"]:
        table, run_id, new = move["table"], int(move["run_id"]), bool(move["new"])
        final, tmp, old = (
            partition_path(root, table, run_id),
            staging_path(root, table, run_id, tag),
            _old(root, table, run_id, tag),
        )
        if new and not tmp.exists():
            continue  # swapped before a crash
        if final.exists():
            os.rename(final, old)
            fault_point("rename")
        if new:
            os.rename(tmp, final)
            fault_point("rename")
    write_json(root / MANIFEST, journal["manifest"])
    fault_point("swap")
    for move in journal["moves"]:
        shutil.rmtree(_old(root, move["table"], int(move["run_id"]), tag), ignore_errors=True)
    journal_path(root, tag).unlink(missing_ok=True)


def journals(root: Path) -> list[dict[str, Any]]:
    """The journals of swaps that a crash interrupted in ``root``, each checked.

    Raises:
        EvalstoreError: a journal that is not one evalstore wrote.
    """
    paths = sorted(p for p in root.glob(".journal-*.json") if _JOURNAL.fullmatch(p.name))
    return [read_journal(p) for p in paths]


def recover(root: Path) -> None:
    """Finish swaps a crash interrupted (every journal is checked before any is applied),
    then remove the staging folders and temporary files of killed exports.

    Raises:
        EvalstoreError: a journal that is not one evalstore wrote (nothing is changed).
    """
    for journal in journals(root):
        apply_journal(root, journal)
    for path in root.glob(".*.tmp"):
        if _WRITING.fullmatch(path.name) and path.is_file() and not path.is_symlink():
            path.unlink(missing_ok=True)
    for table in ALL_TABLES:
        folder = root / table
        if folder.is_dir() and not folder.is_symlink():
            for leftover in folder.glob(".*"):
                if _STAGED.fullmatch(leftover.name) and not leftover.is_symlink():
                    shutil.rmtree(leftover, ignore_errors=True)


def partition_run_id(name: str) -> int | None:
    """The run id of a partition folder's name (``run_id=12`` -> 12), None for other names."""
    match = _PARTITION.fullmatch(name)
    return None if match is None else int(match.group(1))


def is_leftover(folder: Path, name: str) -> bool:
    """Whether ``name`` in ``folder`` (an export folder or one of its table folders) is what
    an export leaves while it runs or when it is killed: the lock, a journal, a staged or
    old partition, a temporary JSON file. Nothing of it is read as data."""
    if folder.name in ALL_TABLES:
        return _STAGED.fullmatch(name) is not None
    return name == LOCK or bool(_JOURNAL.fullmatch(name) or _WRITING.fullmatch(name))
