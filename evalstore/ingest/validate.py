"""Validation of ranked-list rows: one batch at a time, into the stored layout (list key,
item, score, label), with errors that name the file, column and row; and the choice of the
row table (int32 or text items, float32 or float64 scores) from the inputs' types."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import polars as pl

from evalstore.errors import InvalidInput, option
from evalstore.ingest.exact import first_row, score_values
from evalstore.ingest.sources import READ_ERRORS, TEXT_FORMATS, Input, names_text
from evalstore.ingest.spec import (
    INT32,
    LABEL_CONVENTIONS,
    MAX_ROWS,
    TASKS,
    Spec,
    check_labels,
    inputs_text,
    score_warnings,
)

__all__ = [
    "INT32",
    "LABEL_CONVENTIONS",
    "MAX_ROWS",
    "TASKS",
    "Spec",
    "check_labels",
    "decide_storage",
    "first_row",
    "ids_text",
    "inputs_text",
    "score_warnings",
    "validate_batch",
]


def decide_storage(spec: Spec, opened: Sequence[Input]) -> None:
    """Pick the stored score and item types from the inputs' column types (and, for 64-bit
    integer item ids, their range), before the rows are streamed (a column of another type is
    caught later by validation)."""
    score, group = spec.source_column("score"), spec.source_column("group_id")
    spec.float32 = all(source.schema.get(score) == pl.Float32 for source in opened)
    spec.int_groups = all(
        (dtype := source.schema.get(group)) is None or dtype.is_integer() for source in opened
    )
    item = spec.source_column("item_id")
    spec.int_items = all(_int32_column(source, item) for source in opened)


# an integer's text as INTEGER -> VARCHAR writes it: no sign but "-", no leading zero or space
_INT_TEXT = r"^(0|-?[1-9][0-9]{0,9})$"


def _int32_column(source: Input, column: str) -> bool:
    """Whether ``column`` holds integers that fit an INTEGER (reading it when its type does
    not say); in a CSV or TSV file (ids read as text) whether every id is the text of such an
    integer as the store writes it back (``7``, not ``007``, ``+7`` or `` 7``), so that
    storing it as an integer gives the same text."""
    dtype = source.schema.get(column)
    text = dtype == pl.String and source.kind in TEXT_FORMATS
    if dtype is None or not (text or dtype.is_integer()):
        return False
    if dtype in (pl.Int8, pl.Int16, pl.Int32, pl.UInt8, pl.UInt16):
        return True
    values = pl.col(column).cast(pl.Int64, strict=False) if text else pl.col(column)
    try:
        bounds = source.frame.select(
            values.min().alias("lo"),
            values.max().alias("hi"),
            (pl.col(column).str.contains(_INT_TEXT).all() if text else pl.lit(True)).alias("ok"),
        )
        lo, hi, ok = (bounds.collect() if isinstance(bounds, pl.LazyFrame) else bounds).row(0)
    except READ_ERRORS:  # the streaming read reports what is wrong
        return False
    return bool(ok) and (lo is None or (lo >= INT32[0] and hi <= INT32[1]))


def ids_text(ids: pl.Series, label: str, col: str) -> pl.Series:
    """An id column (not of floats) as text; lists, structs and bytes that are not UTF-8
    text are refused."""
    what = str(ids.dtype)
    if not ids.dtype.is_nested():
        try:
            return ids.cast(pl.String)
        except pl.exceptions.PolarsError:  # bytes that are not UTF-8
            what += " that is not UTF-8 text"
    raise InvalidInput(f"{label}: column {col!r} holds {what}; ids must be integers or strings")


def _columns(names: list[str]) -> str:
    """``column 'a'`` or ``columns 'a', 'b'``."""
    return ("column " if len(names) == 1 else "columns ") + ", ".join(repr(n) for n in names)


def validate_batch(batch: pl.DataFrame, spec: Spec, label: str, offset: int) -> pl.DataFrame:
    """Check one batch and return it in the stored layout (without seq)."""
    rename = {theirs: ours for ours, theirs in spec.columns.items()}
    missing_sources = [t for t in rename if t not in batch.columns]
    if missing_sources:
        raise InvalidInput(
            f"{label}: missing {_columns(missing_sources)} named by {option('columns')} "
            f"(columns: {names_text(batch.columns)})"
        )
    shadowed = [c for c in batch.columns if c in set(spec.columns) and c not in rename]
    batch = batch.drop(shadowed).rename(rename)
    required = ["item_id", "score"] + ([] if spec.gains else ["label"])
    required += [] if spec.task == "verification" else ["group_id"]
    absent = [c for c in required if c not in batch.columns]  # every one at once
    if absent:
        raise InvalidInput(
            f"{label}: missing {_columns(absent)} (columns: {names_text(batch.columns)}); "
            f"map {'it' if len(absent) == 1 else 'each'} with "
            + " ".join(option("columns", f"{c}=NAME") for c in absent)
        )
    if "group_id" not in batch.columns:
        batch = batch.with_columns(group_id=pl.lit(None, dtype=pl.Int32))

    def where(col: str, mask: pl.Series) -> str:
        return f"{label}: column {col!r} row {offset + first_row(mask) + 1}"

    for col in ("group_id", "item_id"):
        dtype = batch.schema[col]
        if dtype.is_float():
            raise InvalidInput(
                f"{label}: column {col!r} holds floats ({dtype}); ids must be integers or strings"
            )
        if dtype.is_nested() or dtype == pl.Binary:
            batch = batch.with_columns(ids_text(batch[col], label, col))
    group, item = batch["group_id"], batch["item_id"]
    if item.null_count():
        raise InvalidInput(f"{where('item_id', item.is_null())} is empty")
    if spec.task != "verification" and group.null_count():
        raise InvalidInput(
            f"{where('group_id', group.is_null())} is empty (task {spec.task} needs a list id)"
        )

    # numbers a float64 holds exactly (evalstore.ingest.exact): never rounded into new ties
    score = score_values(batch["score"], label, where)
    score = score.cast(pl.Float32 if spec.float32 else pl.Float64)
    if spec.negate_score:
        score = -score
    nan = score.is_nan().fill_null(False)
    if nan.any():
        raise InvalidInput(
            f"{where('score', nan)} is NaN; scores must be numbers (-inf = not retrieved)"
        )
    pos_inf = (score == np.inf).fill_null(False)
    if pos_inf.any():
        which = "-inf before --negate-score" if spec.negate_score else "+inf"
        raise InvalidInput(
            f"{where('score', pos_inf)} is {which}; only -inf (= not retrieved) is allowed"
        )
    score = pl.select(
        pl.when(score == -np.inf).then(None).otherwise(score).alias("score")
    ).to_series()

    if spec.int_items and item.dtype == pl.String:  # text ids stored as integers: exactly?
        changed = item.cast(pl.Int32, strict=False).cast(pl.String).ne_missing(item)
        if changed.any():
            raise InvalidInput(
                f"{where('item_id', changed)}: {item[first_row(changed)]!r} was not in the "
                "file when it was first read (did it change?); ingest it again"
            )
    gains = _gains(batch["gain"], label, where) if spec.gains else None
    if "label" in batch.columns:
        labels = _labels(batch["label"], spec.labels, label, offset)
    else:  # graded judgements alone: relevant where the grade is positive
        labels = pl.select(
            pl.when(pl.lit(gains) > 0).then(1).otherwise(-1).cast(pl.Int8).alias("label")
        ).to_series()
    # the stream numbers the lists by this key; integer item ids stay integers
    key = group if spec.int_groups else group.cast(pl.String)
    return pl.DataFrame(
        {
            "list_id": key,
            "item": item.cast(pl.Int32) if spec.int_items else item.cast(pl.String),
            "score": score,
            "label": labels,
            **({} if gains is None else {"gain": gains}),
        }
    )


def _gains(raw: pl.Series, label: str, where: Callable[[str, pl.Series], str]) -> pl.Series:
    """The gain column as float64: finite numbers >= 0 (relevance grades), each row given."""
    if raw.dtype == pl.String:  # text files
        parsed = raw.str.strip_chars().cast(pl.Float64, strict=False)
        bad = parsed.is_null()
        if bad.any():
            raise InvalidInput(
                f"{where('gain', bad)}: {raw[first_row(bad)]!r} is not a number; gains are "
                "relevance grades, numbers >= 0"
            )
        raw = parsed
    if not raw.dtype.is_numeric() or raw.dtype == pl.Boolean:
        raise InvalidInput(f"{label}: column 'gain' must be numeric, found {raw.dtype}")
    gain = raw.cast(pl.Float64)
    bad = (gain.is_null() | ~gain.is_finite() | (gain < 0)).fill_null(True)
    if bad.any():
        value = gain[first_row(bad)]
        shown = "empty" if value is None else f"{value:g}"
        raise InvalidInput(
            f"{where('gain', bad)} is {shown}; gains are relevance grades, finite numbers >= 0"
        )
    return gain.alias("gain")


_CONVENTION_TEXT = {
    "pm1": "1 (positive), -1 (negative) or 0 (ignored)",
    "01": "1 (positive) or 0 (negative)",
    "bool": "true (positive) or false (negative)",
}


def _labels(raw: pl.Series, convention: str, label: str, offset: int) -> pl.Series:
    if raw.null_count():
        row = offset + first_row(raw.is_null()) + 1
        raise InvalidInput(f"{label}: column 'label' row {row} is empty")
    expect = _CONVENTION_TEXT[convention]
    if convention == "bool":
        if raw.dtype == pl.Boolean:
            out = raw
        elif raw.dtype == pl.String:
            lowered = raw.str.to_lowercase()
            bad = ~lowered.is_in(["true", "false"])
            if bad.any():
                row = offset + first_row(bad) + 1
                raise InvalidInput(
                    f"{label}: column 'label' row {row}: {raw[first_row(bad)]!r} is not a label "
                    f"under {option('labels', 'bool')} (expected {expect})"
                )
            out = lowered == "true"
        else:
            raise InvalidInput(
                f"{label}: column 'label' holds {raw.dtype}; {option('labels', 'bool')} "
                f"expects {expect}"
            )
        return pl.select(
            pl.when(out).then(1).otherwise(-1).cast(pl.Int8).alias("label")
        ).to_series()
    if raw.dtype == pl.Boolean:
        raise InvalidInput(
            f"{label}: column 'label' holds booleans; pass {option('labels', 'bool')} to read "
            "them as "
            "true = positive, false = negative"
        )
    if not raw.dtype.is_numeric():
        raise InvalidInput(f"{label}: column 'label' must be numeric ({expect}), found {raw.dtype}")
    allowed = [1, -1, 0] if convention == "pm1" else [1, 0]
    as_float = raw.cast(pl.Float64)
    bad = ~as_float.is_in([float(a) for a in allowed])
    if bad.any():
        i = first_row(bad)
        hint = f"; pass {option('labels', '01')} for 0/1 labels" if convention == "pm1" else ""
        raise InvalidInput(
            f"{label}: column 'label' row {offset + i + 1}: {raw[i]!r} is not a label under "
            f"{option('labels', convention)} (expected {expect}){hint}"
        )
    out = as_float.cast(pl.Int8)
    if convention == "01":
        out = pl.select(
            pl.when(out == 1).then(1).otherwise(-1).cast(pl.Int8).alias("label")
        ).to_series()
    return out.alias("label")
