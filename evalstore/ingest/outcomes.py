"""Ingest of counted outcomes per group (TP/FP/FN), for the IOU metrics."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from evalstore.errors import InvalidInput
from evalstore.ingest.frames import finite, ids_of, read_frame, where, write_tables
from evalstore.ingest.sources import Source, as_sources, parse_columns
from evalstore.ingest.validate import first_row
from evalstore.ingest.write import IngestResult
from evalstore.runs.meta import RunMeta, run_meta

if TYPE_CHECKING:
    from evalstore.db.connection import Database, Progress

__all__ = ["MAX_COUNT", "OUTCOME_COLUMNS", "ingest_outcomes"]

OUTCOME_COLUMNS = ("group_id", "tp", "fp", "fn", "outcome")


def ingest_outcomes(
    store: Database,
    data: Source | Sequence[Source],
    *,
    meta: RunMeta | None = None,
    fmt: str | None = None,
    columns: Sequence[str] | Mapping[str, str] | None = None,
    progress: Progress | None = None,
    run: str | None = None,
    experiment: str | None = None,
    replace: bool = False,
    append: bool = False,
    params: Sequence[str] | Mapping[str, Any] | None = None,
    tags: Sequence[str] = (),
    notes: str | None = None,
    created_at: str | datetime | None = None,
    git_commit: str | bool | None = True,
) -> IngestResult:
    """Ingest counted outcomes per group: ``group_id, tp, fp, fn``, or one row per item with
    ``group_id, outcome`` where outcome is ``tp``, ``fp`` or ``fn`` (counted here). The
    arguments are :func:`evalstore.ingest.ingest`'s (``meta``, or the keywords kept for
    compatibility).

    Raises:
        InvalidInput: negative or fractional counts, an unknown outcome, a group twice.
    """
    meta = run_meta(meta, run=run, experiment=experiment, params=params, tags=tags, notes=notes,
                    created_at=created_at, git_commit=git_commit, replace=replace,
                    append=append)  # fmt: skip
    sources = as_sources(data)
    frame = read_frame(sources, fmt, parse_columns(columns, OUTCOME_COLUMNS), ["group_id"])
    groups = ids_of(frame, "group_id")
    if "outcome" in frame.columns and not {"tp", "fp", "fn"} & set(frame.columns):
        kind = _text(frame, "outcome").str.to_lowercase()
        bad = ~kind.is_in(["tp", "fp", "fn"]).fill_null(False)
        if bad.any():
            raise InvalidInput(
                f"{where(frame, bad.to_numpy(), 'outcome')}: "
                f"{frame['outcome'][int(bad.arg_true()[0])]!r} is not tp, fp or fn"
            )
        counts = (
            pl.DataFrame({"group_id": groups.astype(str), "kind": kind})
            .group_by("group_id", maintain_order=True)
            .agg(**{k: (pl.col("kind") == k).sum().cast(pl.Int64) for k in ("tp", "fp", "fn")})
        )
    else:
        values = {col: _counts(frame, col) for col in ("tp", "fp", "fn")}
        dup = pl.Series(groups).is_duplicated().to_numpy()
        if dup.any():
            raise InvalidInput(
                f"{where(frame, dup, 'group_id')}: group {groups[dup][0]!r} appears twice"
            )
        counts = pl.DataFrame({"group_id": groups.astype(str), **values})
        total = counts["tp"] + counts["fp"] + counts["fn"]  # each <= 2^53: no overflow
        big = total > MAX_COUNT
        if big.any():
            raise InvalidInput(
                f"{where(frame, big.to_numpy(), 'tp')}: tp + fp + fn is {total[first_row(big)]:,}; "
                f"a group's counts may add up to {MAX_COUNT:,} (2^53) at most, which metrics "
                "sum and divide exactly"
            )
    _outcomes = counts.to_arrow()
    run_id, replaced = write_tables(
        store, meta, "outcomes", meta.replace, meta.append, {"_outcomes": _outcomes}
    )
    return IngestResult(
        run_id=run_id,
        experiment=meta.experiment,
        name=meta.name,
        task="outcomes",
        rows=frame.height,
        lists=counts.height,
        not_retrieved=0,
        replaced=replaced,
        files=[str(s) for s in sources if isinstance(s, (str, os.PathLike))],
    )


# the most a count, and a group's tp + fp + fn, may be: exact as a double, and far from a
# BIGINT's overflow in the metrics' sums (iou adds a group's counts, iou_micro a run's)
MAX_COUNT = 1 << 53


def _counts(frame: pl.DataFrame, col: str) -> pl.Series:
    """A column of counts as int64: whole numbers from 0 to 2^53."""
    series = frame[col] if col in frame.columns else None
    if series is not None and series.dtype.is_integer() and not series.null_count():
        counts = series.cast(pl.Int64, strict=False)  # null: beyond a BIGINT
        too_big = counts.is_null() | (counts > MAX_COUNT)
        for bad, limit in ((counts < 0, ">= 0"), (too_big, f"from 0 to {MAX_COUNT:,} (2^53)")):
            if bad.any():
                raise InvalidInput(
                    f"{where(frame, bad.to_numpy(), col)} is {series[first_row(bad)]}; counts "
                    f"must be whole numbers {limit}"
                )
        return counts
    v = finite(frame, (col,), "counts")[col]
    bad = (v < 0) | (v != np.round(v))
    if bad.any():
        raise InvalidInput(
            f"{where(frame, bad, col)} is {v[bad][0]:g}; counts must be whole numbers >= 0"
        )
    big = v > MAX_COUNT
    if big.any():
        raise InvalidInput(
            f"{where(frame, big, col)} is {v[big][0]:g}; counts must be whole numbers from 0 "
            f"to {MAX_COUNT:,} (2^53)"
        )
    return pl.Series(col, v.astype(np.int64))


def _text(frame: pl.DataFrame, col: str) -> pl.Series:
    """A column of words (lists, structs and bytes that are not UTF-8 text refused)."""
    dtype = frame[col].dtype
    if not dtype.is_nested():
        try:
            return frame[col].cast(pl.String)
        except pl.exceptions.PolarsError:  # bytes that are not UTF-8
            pass
    raise InvalidInput(f"{frame['_file'][0]}: column {col!r} holds {dtype}, not words")
