"""The SHA-256 of every file an export writes, recorded in its manifest (format version 2)
and checked by an import before it reads a file: a flipped byte, a truncated, swapped or
replaced file is refused with one line naming it, before anything is written.

A run of the manifest records ``"sha256": {table: hex digest}``, one for every table it has
rows of. An export of format version 1 (before checksums) has none: its files are read
unchecked and the import warns (:func:`checksums_of` returns None).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalstore.errors import EvalstoreError
from evalstore.scale.layout import ALL_TABLES

__all__ = ["NO_CHECKSUMS", "check_file", "checksums_of", "file_sha256"]

#: The warning of an import of an export written without checksums ({where}: its manifest).
NO_CHECKSUMS = (
    "{where}: an export of format version 1, written without checksums: its files cannot be "
    "checked for damage (rows are checked as ingest checks them); export the runs again to "
    "add them"
)


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, in hex (read in 1 MiB blocks)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


_SHA256 = re.compile(r"[0-9a-f]{64}")


def checksums_of(entry: Mapping[str, Any], version: int, where: str) -> dict[str, str] | None:
    """The SHA-256 of each file of a manifest run (``entry``), by table: one for every table
    it has rows of, none for the others. None for a run of a version-1 export written
    without them.

    Raises:
        EvalstoreError: a version-2 run without them, or checksums that are not one 64-digit
            hex per table with rows (``where`` names the manifest).
    """
    ref = f"run {entry.get('experiment')}/{entry.get('name')}"
    sums = entry.get("sha256")
    if sums is None and version < 2:
        return None
    if not isinstance(sums, dict):
        raise EvalstoreError(
            f"{where}: {ref} has no SHA-256 of its files ('sha256'), which format version "
            f"{version} records; the export is damaged, nothing was imported"
        )
    with_rows = {t for t, n in entry["rows"].items() if n}
    for table, value in sums.items():
        if table not in with_rows or not (isinstance(value, str) and _SHA256.fullmatch(value)):
            raise EvalstoreError(
                f"{where}: {ref}: sha256 of {table!r} is {value!r:.70}, not the SHA-256 of a "
                "file it has; the export is damaged, nothing was imported"
            )
    missing = sorted(with_rows - set(sums), key=ALL_TABLES.index)
    if missing:
        raise EvalstoreError(
            f"{where}: {ref} has {missing[0]} rows but no SHA-256 of their file; the export is "
            "damaged, nothing was imported"
        )
    return dict(sums)


def check_file(path: Path, want: str) -> None:
    """Refuse a file whose SHA-256 is not ``want`` (what its export recorded).

    Raises:
        EvalstoreError: naming the file; or that it cannot be read.
    """
    try:
        have = file_sha256(path)
    except OSError as exc:
        raise EvalstoreError(
            f"{path}: cannot read ({exc.strerror or exc}); nothing was imported"
        ) from None
    if have != want:
        raise EvalstoreError(
            f"{path}: its SHA-256 is {have[:16]}..., the manifest says {want[:16]}...: the file "
            "changed after it was exported; the export is damaged, nothing was imported"
        )
