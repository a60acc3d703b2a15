"""Reading an ingest's inputs: files (Parquet, CSV, TSV, NDJSON, npz) and in-memory frames,
as polars frames with their schema. The ``--column`` mapping and the checks of a path are
:mod:`evalstore.ingest.paths`'s (no polars), kept here for their callers."""

from __future__ import annotations

import io
import os
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import polars as pl

from evalstore.errors import InvalidInput
from evalstore.ingest.handoff import Put, handed_over
from evalstore.ingest.npz import NPY_ERRORS, read_npz
from evalstore.ingest.paths import (
    COLUMNS,
    FORMATS,
    GLOB,
    as_sources,
    check_file,
    first_line,
    format_of,
    names_text,
    parse_columns,
    source_columns,
)

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

#: what polars raises on a file it cannot read: its errors, and a panic of its reader (a
#: BaseException, which some damaged Parquet files cause)
READ_ERRORS = (pl.exceptions.PolarsError, pl.exceptions.PanicException)
BATCH_ROWS = 1 << 20
TEXT_FORMATS = ("csv", "tsv")  # formats without types: their id columns are read as text


class Input(NamedTuple):
    """One opened input: its label for messages, its frame and schema, and for a file its
    path and format."""

    label: str  # file path or a short description of an in-memory source
    frame: pl.LazyFrame | pl.DataFrame
    schema: pl.Schema
    path: Path | None = None  # a file's path, and its format
    kind: str | None = None


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
        kind = format_of(path, fmt)
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
    label = f"data[{index}]"  # an in-memory input, given from Python: its position
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
