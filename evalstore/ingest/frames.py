"""Reading keypoint and outcome inputs whole, as one frame with the file and row of every
row (for messages), the checks they share, and the one transaction that writes them."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np
import polars as pl

from evalstore.db import queries
from evalstore.errors import InvalidInput, option
from evalstore.ingest.sources import (
    READ_ERRORS,
    Source,
    first_line,
    names_text,
    open_source,
    source_columns,
)
from evalstore.ingest.validate import ids_text
from evalstore.runs import registry as runs

if TYPE_CHECKING:
    from evalstore.db.connection import Database

__all__ = ["finite", "ids_of", "read_frame", "row_of", "shown", "where", "write_tables"]


def read_frame(
    sources: Sequence[Source], fmt: str | None, mapping: dict[str, str], ids: Sequence[str]
) -> pl.DataFrame:
    """All sources as one frame with our column names plus ``_file``, the source of every row
    (an enum of the source labels: four bytes a row, not a string), for messages (:func:`where`
    finds a row's number in its file); our id columns ``ids`` read from CSV/TSV as text,
    exactly as written (``007`` stays ``007``), and present in every source (integers beyond
    64 bits as text)."""
    text = [c for c in source_columns(mapping, ids).values() if c is not None]
    frames, labels = [], []
    for i, source in enumerate(sources):
        label, frame = open_source(source, fmt, i, text)[:2]
        if isinstance(frame, pl.LazyFrame):
            try:
                frame = frame.collect()
            except READ_ERRORS as exc:
                raise InvalidInput(f"{label}: cannot read: {first_line(exc)}") from None
        if frame.height == 0:
            raise InvalidInput(f"{label}: no rows")
        rename = {theirs: ours for ours, theirs in mapping.items()}
        missing = [t for t in rename if t not in frame.columns]
        if missing:
            raise InvalidInput(
                f"{label}: missing column {missing[0]!r} named by {option('columns')} "
                f"(columns: {names_text(frame.columns)})"
            )
        frame = frame.drop([c for c in frame.columns if c in mapping and c not in rename])
        frame = frame.rename(rename)
        absent = [c for c in ids if c not in frame.columns]
        if absent:
            raise InvalidInput(
                f"{label}: missing column {absent[0]!r} (columns: {names_text(frame.columns)})"
            )
        # integer ids beyond 64 bits (an NDJSON file's 2^63) as their text: NumPy has no
        # 128-bit integers, and ids are stored as text
        wide = [c for c in ids if frame[c].dtype in (pl.Int128, pl.UInt128)]
        frames.append(frame.with_columns(pl.col(wide).cast(pl.String)) if wide else frame)
        labels.append(label)
    # one category per source: a file given twice is told apart by its place in the list
    seen: dict[str, int] = {}
    for k, lb in enumerate(labels):
        seen[lb] = seen.get(lb, 0) + 1
        if seen[lb] > 1:
            labels[k] = f"{lb} (copy {seen[lb]})"
    files = pl.Enum(labels)
    try:
        combined = pl.concat(
            [
                f.with_columns(_file=pl.lit(b, dtype=files))
                for f, b in zip(frames, labels, strict=True)
            ],
            how="diagonal_relaxed",
        )
    except pl.exceptions.PolarsError as exc:  # a column of types that have no common one
        raise InvalidInput(
            f"{', '.join(labels)}: cannot combine these inputs: {first_line(exc)}"
        ) from None
    # chunks of at least a row group each (a Parquet file's row groups) are kept: DuckDB
    # inserts them in whole row groups but at their ends, and a copy of every column costs
    # more (0.5 CPU s at 2e7 matches, mostly page faults); small ones (a CSV reader's) are
    # joined into one
    if combined.n_chunks() > max(1, combined.height // _ROW_GROUP):
        combined = combined.rechunk()
    return combined


#: DuckDB's row group: the rows it writes together
_ROW_GROUP = 122_880


def row_of(frame: pl.DataFrame, i: int) -> int:
    """The 1-based row in its source of the frame's row ``i``: the rows of a source are
    contiguous, so it counts back to the first row of the same ``_file``."""
    files = frame["_file"].to_physical()
    other = (files[: i + 1] != files[i]).arg_true()
    return i - (int(other[-1]) + 1 if len(other) else 0) + 1


def where(frame: pl.DataFrame, mask: pl.Series | np.ndarray, col: str) -> str:
    i = int(np.flatnonzero(np.asarray(mask))[0])
    return f"{frame['_file'][i]}: column {col!r} row {row_of(frame, i)}"


def finite(frame: pl.DataFrame, cols: Sequence[str], what: str) -> dict[str, np.ndarray]:
    out = {}
    for col in cols:
        if col not in frame.columns:
            raise InvalidInput(
                f"{frame['_file'][0]}: missing column {col!r} (columns: "
                f"{names_text([c for c in frame.columns if not c.startswith('_')])})"
            )
        series = frame[col]
        if not (series.dtype.is_numeric() or series.dtype == pl.Null):
            raise InvalidInput(
                f"{frame['_file'][0]}: column {col!r} must be numeric, found {series.dtype}"
            )
        values = series.cast(pl.Float64).to_numpy()
        bad = ~np.isfinite(values)
        if bad.any():
            raise InvalidInput(
                f"{where(frame, bad, col)} is {shown(values[bad][0])}; "
                f"{what} must be finite numbers"
            )
        out[col] = values
    return out


def shown(value: float) -> str:
    return "empty or NaN" if np.isnan(value) else f"{value:g}"


def ids_of(frame: pl.DataFrame, col: str) -> np.ndarray:
    if col not in frame.columns:
        raise InvalidInput(f"{frame['_file'][0]}: missing column {col!r}")
    if frame[col].dtype.is_float():
        raise InvalidInput(
            f"{frame['_file'][0]}: column {col!r} holds floats; ids must be integers or strings"
        )
    ids = ids_text(frame[col], str(frame["_file"][0]), col)
    if ids.null_count():
        raise InvalidInput(f"{where(frame, ids.is_null().to_numpy(), col)} is empty")
    return ids.to_numpy().astype(object)


_WRITES = {
    "keypoints": (
        "store/run_has_pairs",
        ("store/insert_pairs", "store/insert_matches", "store/insert_pair_cameras"),
    ),
    "outcomes": ("store/run_has_outcomes", ("store/insert_outcomes",)),
    "detection": (
        "store/run_has_detections",
        tuple(f"store/insert_det_{t}" for t in ("images", "categories", "truth", "boxes")),
    ),
}


def write_tables(
    store: Database,
    meta: runs.RunMeta,
    task: str,
    replace: bool,
    append: bool,
    frames: dict[str, Any],
) -> tuple[int, bool]:
    """Open the run (new, replaced or reopened to append) and write the frames through the
    task's named queries, all in one transaction. Returns (run_id, replaced)."""
    has_task, inserts = _WRITES[task]
    con = store.con
    with store.transaction():
        run_id, replaced = runs.open_run(
            con,
            meta,
            replace=replace,
            append=append,
            has_task=lambda rid: queries.fetch_rows(con, has_task, {"run_id": rid})[0][0] > 0,
            task=task,
        )
        try:
            for name, frame in frames.items():
                con.register(name, frame)
            for insert in inserts:
                queries.run(con, insert, {"run_id": run_id})
        finally:
            for name in frames:
                with contextlib.suppress(duckdb.Error):  # fails in an aborted transaction
                    con.unregister(name)
    return run_id, replaced
