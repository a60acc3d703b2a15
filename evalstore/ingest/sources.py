"""Reading an ingest's inputs: files (Parquet, CSV, TSV, NDJSON, npz) and in-memory frames,
as polars frames with their schema, and the ``--column`` mapping of their columns to ours."""

from __future__ import annotations

import errno
import io
import os
import re
import stat
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import polars as pl

from evalstore.errors import InvalidInput
from evalstore.ingest.handoff import Put, handed_over
from evalstore.ingest.npz import NPY_ERRORS, read_npz

__all__ = [
    "BATCH_ROWS",
    "COLUMNS",
    "FORMATS",
    "GLOB",
    "NPY_ERRORS",
    "READ_ERRORS",
    "TEXT_FORMATS",
    "Input",
    "Source",
    "as_sources",
    "batches",
    "check_file",
    "first_line",
    "names_text",
    "open_source",
    "parquet_rows",
    "parse_columns",
    "source_columns",
]

Source = str | os.PathLike | pl.DataFrame | pl.LazyFrame | Mapping[str, Any] | Any
"""A path, a polars/pandas frame, a pyarrow Table, or a dict of equal-length arrays."""

FORMATS = ("parquet", "csv", "tsv", "ndjson", "npz", "voc", "trec")
_EXTENSIONS = {
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
#: what polars raises on a file it cannot read: its errors, and a panic of its reader (a
#: BaseException, which some damaged Parquet files cause)
READ_ERRORS = (pl.exceptions.PolarsError, pl.exceptions.PanicException)
BATCH_ROWS = 1 << 20
TEXT_FORMATS = ("csv", "tsv")  # formats without types: their id columns are read as text


def as_sources(data: Source | Sequence[Source]) -> list[Source]:
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
                raise InvalidInput(f"--column {item!r} is not OURS=THEIRS (e.g. score=distance)")
            mapping[ours.strip()] = theirs.strip()
    unknown = sorted(set(mapping) - set(known))
    if unknown:
        raise InvalidInput(
            f"--column maps unknown column {unknown[0]!r}; evalstore's columns here are "
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


class Input(NamedTuple):
    """One opened input: its label for messages, its frame and schema, and for a file its
    path and format."""

    label: str  # file path or a short description of an in-memory source
    frame: pl.LazyFrame | pl.DataFrame
    schema: pl.Schema
    path: Path | None = None  # a file's path, and its format
    kind: str | None = None


def _format_of(path: Path, fmt: str | None) -> str:
    if fmt is not None:
        if fmt not in FORMATS:
            raise InvalidInput(f"unknown --format {fmt!r}; use one of {', '.join(FORMATS)}")
        return fmt
    found = _EXTENSIONS.get(path.suffix.lower())
    if found is None:
        raise InvalidInput(
            f"{path}: cannot tell the format from the extension {path.suffix!r}; "
            f"pass --format ({', '.join(FORMATS)})"
        )
    return found


GLOB = re.compile(r"[*?\[\]{}]")  # what polars and DuckDB would expand in a file name


def _lazy_file(
    path: Path, fmt: str, text: Sequence[str], wanted: Collection[str] | None = None
) -> pl.LazyFrame | pl.DataFrame:
    """The file itself, never the files its name would match as a pattern; in CSV and TSV
    the columns ``text`` (ids) read as strings, exactly as written (``007`` stays ``007``),
    and any other column's type inferred; of an npz file only the arrays ``wanted`` (None:
    all)."""
    if fmt == "parquet":
        return pl.scan_parquet(path, glob=False)
    if fmt in TEXT_FORMATS:
        return pl.scan_csv(
            path,
            separator="\t" if fmt == "tsv" else ",",
            infer_schema_length=10_000,
            schema_overrides=dict.fromkeys(text, pl.String) or None,  # absent ones: ignored
            glob=False,
        )
    if fmt == "ndjson":  # scan_ndjson has no glob=False; a name like run[1].ndjson is read whole
        source = io.BytesIO(path.read_bytes()) if GLOB.search(str(path)) else path
        return pl.scan_ndjson(source, infer_schema_length=10_000)
    return _npz_frame(path, wanted)


def _npz_frame(path: Path, wanted: Collection[str] | None) -> pl.DataFrame:
    """The arrays of an ``.npz`` file as a frame, each member's header checked before any is
    read (:mod:`evalstore.ingest.npz`); the 1-D members that ``wanted`` leaves out are not
    read, and stand in the frame as columns of nulls (so that messages list every column)."""
    arrays, unread = read_npz(path, wanted)
    frame = _frame_from_mapping(arrays, str(path))
    nulls = [pl.repeat(None, n, dtype=pl.Null, eager=True).alias(k) for k, n in unread.items()]
    return frame.hstack(nulls) if arrays else pl.DataFrame(nulls)


def _frame_from_mapping(data: Mapping[str, Any], label: str) -> pl.DataFrame:
    columns = {}
    for key, values in data.items():
        arr = np.asarray(values)
        if arr.ndim != 1:
            raise InvalidInput(f"{label}: array {key!r} has shape {arr.shape}; expected 1-D")
        columns[key] = arr
    lengths = {k: len(v) for k, v in columns.items()}
    if len(set(lengths.values())) > 1:
        raise InvalidInput(f"{label}: arrays have different lengths: {lengths}")
    series = []
    for key, arr in columns.items():
        try:
            column = pl.Series(key, arr)
        except (TypeError, ValueError, pl.exceptions.PolarsError) as exc:
            raise InvalidInput(
                f"{label}: array {key!r} of dtype {arr.dtype} is not a column: {first_line(exc)}"
            ) from None
        if column.dtype == pl.Object:  # complex, structured, raw bytes: no column type of ours
            raise InvalidInput(f"{label}: array {key!r} of dtype {arr.dtype} is not a column")
        series.append(column)
    return pl.DataFrame(series)


def batches(frame: pl.LazyFrame | pl.DataFrame, label: str) -> Iterator[pl.DataFrame]:
    if isinstance(frame, pl.DataFrame):
        if frame.height == 0:
            yield frame
        for offset in range(0, frame.height, BATCH_ROWS):
            yield frame.slice(offset, BATCH_ROWS)
        return
    try:
        yield from handed_over(lambda put: _sink(frame, put))
    except READ_ERRORS as exc:
        raise InvalidInput(f"{label}: cannot read: {first_line(exc)}") from None


def _sink(frame: pl.LazyFrame, put: Put) -> None:
    """Every batch of ``frame`` handed to ``put``, by polars' streaming engine; returns once
    the input is read whole (or ``put`` says stop), else raises. Not ``collect_batches``:
    a SIGINT that polars' own handler catches (installed when polars is imported, even where
    SIGINT was ignored) ends its iteration as if the input had ended (polars 2.1), which let
    a Ctrl-C commit a run cut at a multiple of 2^20 rows; ``sink_batches`` raises
    KeyboardInterrupt instead."""
    frame.sink_batches(lambda batch: not put(batch), chunk_size=BATCH_ROWS)


def parquet_rows(path: Path) -> int:
    """The rows a Parquet file says it has (its footer): a panic of polars' reader on a
    damaged page ends its batches early without an error, so the rows read are counted
    against these."""
    try:
        return int(pl.scan_parquet(path, glob=False).select(pl.len()).collect().item())
    except READ_ERRORS as exc:
        raise InvalidInput(f"{path}: cannot read as parquet: {first_line(exc)}") from None


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


def open_source(
    source: Source,
    fmt: str | None,
    index: int,
    text: Sequence[str] = (),
    wanted: Collection[str] | None = None,
) -> Input:
    """One source opened; ``text``: the input columns read as strings from a CSV or TSV file
    (its id columns: no type is inferred from ids, whose text is what they are; the score,
    whose text says whether a float64 holds it); ``wanted``: the columns an ingest may read
    (an npz file's other arrays are not decompressed; None: every column)."""
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        check_file(path)
        kind = _format_of(path, fmt)
        try:
            frame = _lazy_file(path, kind, text, wanted)
            schema = _schema(frame)
        except InvalidInput:
            raise
        except (*READ_ERRORS, OSError, ValueError, EOFError) as exc:
            raise InvalidInput(f"{path}: cannot read as {kind}: {first_line(exc)}") from None
        if not schema:
            raise InvalidInput(f"{path}: no columns")
        return Input(str(path), frame, schema, path, kind)
    label = f"input #{index + 1}"
    if isinstance(source, (pl.DataFrame, pl.LazyFrame)):
        frame = source
    elif isinstance(source, Mapping):
        frame = _frame_from_mapping(source, label)
    else:
        try:
            frame = pl.from_pandas(source) if _is_pandas(source) else pl.from_arrow(source)  # type: ignore[assignment]
        except (TypeError, ValueError) as exc:
            raise InvalidInput(
                f"{label}: unsupported data of type {type(source).__name__}: {first_line(exc)}"
            ) from None
    return Input(label, frame, _schema(frame))


def _schema(frame: pl.LazyFrame | pl.DataFrame) -> pl.Schema:
    return frame.collect_schema() if isinstance(frame, pl.LazyFrame) else frame.schema


def _is_pandas(obj: Any) -> bool:
    return type(obj).__module__.startswith("pandas")
