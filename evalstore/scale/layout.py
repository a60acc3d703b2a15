"""The export folder on disk: its layout, its manifest, the journal of a swap, the lock.

Layout of an export folder ``DIR``::

    DIR/manifest.json                         schema version, tables and columns, runs
    DIR/<table>/run_id=<id>/part-0.parquet    one folder per (table, run), hive-style

Staging folders (``.tmp-*``), folders moved aside (``.old-*``) and journals (``.journal-*``)
start with ``.``, so Spark's partition discovery skips them. :func:`apply_journal` swaps a
run's staged folders into place and :func:`recover` finishes a swap a crash interrupted.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from evalstore.errors import EvalstoreError

__all__ = [
    "BATCH_ROWS",
    "FORMAT",
    "FORMAT_VERSION",
    "MANIFEST",
    "PART",
    "PARTITION_COLUMN",
    "TABLES",
    "apply_journal",
    "check_manifest",
    "journal_path",
    "locked",
    "partition_path",
    "read_manifest",
    "recover",
    "staging_path",
    "write_json",
]

#: The raw tables, in the order they are written and imported (runs first).
TABLES: tuple[str, ...] = ("runs", "scores", "groups", "matches", "pairs", "outcomes")
#: ``scores`` is a view over the row tables of sql/schema/007_lean_rows.sql: an imported
#: run's ranked items go to the leanest one that holds them exactly (see importer.py).
FORMAT = "evalstore-export"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
PART = "part-0.parquet"
PARTITION_COLUMN = "run_id"
BATCH_ROWS = 1 << 20


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
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise EvalstoreError(
            f"{where}: export format version {version!r} is newer than this evalstore reads "
            f"({FORMAT_VERSION}); upgrade evalstore"
        )
    for key in ("schema_version", "tables", "runs"):
        if key not in manifest:
            raise EvalstoreError(f"{where}: the manifest has no {key!r}")
    return manifest


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
        fh = open(root / ".evalstore-export.lock", "a+")  # noqa: SIM115 (closed below)
    except OSError:
        if required:
            raise
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
        if new:
            os.rename(tmp, final)
    write_json(root / MANIFEST, journal["manifest"])
    for move in journal["moves"]:
        shutil.rmtree(_old(root, move["table"], int(move["run_id"]), tag), ignore_errors=True)
    journal_path(root, tag).unlink(missing_ok=True)


def recover(root: Path) -> None:
    """Finish swaps a crash interrupted, then remove staging folders left by failed exports."""
    for path in sorted(root.glob(".journal-*.json")):
        try:
            journal = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:  # written atomically, so only a foreign file can be unreadable
            raise EvalstoreError(f"{path}: unreadable export journal; remove it") from None
        apply_journal(root, journal)
    for table in TABLES:
        folder = root / table
        if folder.is_dir():
            for leftover in [*folder.glob(".tmp-*"), *folder.glob(".old-*")]:
                shutil.rmtree(leftover, ignore_errors=True)
