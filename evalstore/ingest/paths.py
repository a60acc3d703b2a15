"""An ingest's inputs before they are read, without polars: the formats and their
extensions, a path checked to be a readable regular file, the ``--column`` mapping of an
input's columns to ours, and the text of messages that name columns."""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evalstore.errors import InvalidInput, option

__all__ = [
    "COLUMNS",
    "EXTENSIONS",
    "FORMATS",
    "GLOB",
    "as_sources",
    "check_file",
    "first_line",
    "format_of",
    "names_text",
    "parse_columns",
    "source_columns",
]

FORMATS = ("parquet", "csv", "tsv", "ndjson", "npz", "voc", "trec")
EXTENSIONS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".ndjson": "ndjson",
    ".jsonl": "ndjson",
    ".npz": "npz",
}
COLUMNS = ("group_id", "item_id", "score", "label")

GLOB = re.compile(r"[*?\[\]{}]")  # what polars and DuckDB would expand in a file name


def as_sources(data: Any) -> list[Any]:
    """One source or a list or tuple of them, as a list."""
    return list(data) if isinstance(data, (list, tuple)) else [data]


def parse_columns(
    items: Sequence[str] | Mapping[str, str] | None, known: Sequence[str] = COLUMNS
) -> dict[str, str]:
    """``["score=distance"]`` -> ``{"score": "distance"}`` (our column = the input's column)."""
    if items is None:
        return {}
    if isinstance(items, Mapping):
        mapping = dict(items)
    else:
        mapping = {}
        for item in items:
            ours, sep, theirs = item.partition("=")
            if not sep or not ours.strip() or not theirs.strip():
                raise InvalidInput(
                    f"{option('columns')} entry {item!r} is not OURS=THEIRS (e.g. score=distance)"
                )
            mapping[ours.strip()] = theirs.strip()
    unknown = sorted(set(mapping) - set(known))
    if unknown:
        raise InvalidInput(
            f"{option('columns')} maps unknown column {unknown[0]!r}; evalstore's columns here are "
            + ", ".join(known)
        )
    return mapping


def source_columns(mapping: Mapping[str, str], ours: Sequence[str]) -> dict[str, str | None]:
    """The input column each of ``ours`` is read from under ``mapping`` (our column -> the
    input's), as the readers rename them (``{theirs: ours}``, dropping an input column named
    like a mapped one of ours): a mapped column from its source (None when another of our
    columns is mapped from it and takes it); an unmapped one from the column of its own name,
    unless that column is the source of a mapping (None: no such column).

    >>> source_columns({"item_id": "doc", "score": "item_id"}, ["group_id", "item_id"])
    {'group_id': 'group_id', 'item_id': 'doc'}
    """
    rename = {theirs: name for name, theirs in mapping.items()}
    found: dict[str, str | None] = {}
    for name in ours:
        if name in mapping:
            theirs = mapping[name]
            found[name] = theirs if rename[theirs] == name else None
        else:
            found[name] = None if name in rename else name
    return found


def format_of(path: Path, fmt: str | None) -> str:
    """The format of the file ``path``: ``fmt`` if given (checked), else its extension's."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise InvalidInput(f"unknown {option('fmt', fmt)}; use one of {', '.join(FORMATS)}")
        return fmt
    found = EXTENSIONS.get(path.suffix.lower())
    if found is None:
        raise InvalidInput(
            f"{path}: cannot tell the format from the extension {path.suffix!r}; "
            f"pass {option('fmt')} ({', '.join(FORMATS)})"
        )
    return found


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (or its type's name), for a message of one
    line."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def names_text(names: Sequence[str]) -> str:
    """Column names for a message: ``a, b``; a name with a line break, a control character or
    surrounding space quoted, so that the message stays one line and says what is there.

    >>> names_text(["group_id", "score\\n", ""])
    "group_id, 'score\\\\n', ''"
    """
    return ", ".join(
        name if name and name.isprintable() and name.strip() == name else repr(name)
        for name in names
    )


def _not_a_file(path: Path) -> str | None:
    """What ``path`` is when it is not a readable regular file (None when it is one): the
    message says what is there instead, never a bare "no such file" for a device, a FIFO
    (reading one would block or never end), a socket or a symbolic link that leads nowhere."""
    try:
        link = path.lstat()
    except FileNotFoundError:
        return "no such file"
    except OSError as exc:  # a component that is a file, a name too long, permission
        return f"cannot open: {exc.strerror or type(exc).__name__}"
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        if not stat.S_ISLNK(link.st_mode):
            return f"cannot open: {exc.strerror or type(exc).__name__}"
        if exc.errno == errno.ELOOP:
            return "a symbolic link loop, not a file"
        if isinstance(exc, FileNotFoundError):
            return f"a symbolic link to a missing file ({os.readlink(path)!r})"
        return f"a symbolic link that cannot be followed: {exc.strerror or type(exc).__name__}"
    kinds = (
        (stat.S_ISDIR, "a folder, not a file"),
        (stat.S_ISCHR, "a device, not a file"),
        (stat.S_ISBLK, "a device, not a file"),
        (stat.S_ISFIFO, "a FIFO (named pipe), not a file"),
        (stat.S_ISSOCK, "a socket, not a file"),
    )
    for test, what in kinds:
        if test(mode):
            return what
    if not stat.S_ISREG(mode):
        return "not a regular file"
    try:
        with open(path, "rb"):
            pass
    except PermissionError:
        return "permission denied: cannot read it"
    except OSError as exc:
        return f"cannot open: {exc.strerror or type(exc).__name__}"
    return None


def check_file(path: Path, empty_ok: bool = False) -> None:
    """Refuse a path that is not a readable regular file (saying what it is instead: no such
    file, a folder, a device, a FIFO, a socket, a symbolic link loop or one to a missing
    file, a file without read permission), or an empty one unless ``empty_ok``."""
    what = _not_a_file(path)
    if what is not None:
        raise InvalidInput(f"{path}: {what}")
    if not empty_ok and path.stat().st_size == 0:
        raise InvalidInput(f"{path}: empty file")
