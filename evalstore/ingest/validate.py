"""Validation of ranked-list rows: one batch at a time, into the stored layout (list key,
item, score, label), with errors that name the file, column and row; and the choice of the
row table (int32 or text items, float32 or float64 scores) from the inputs' types."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from evalstore.errors import InvalidInput
from evalstore.ingest.sources import Input
from evalstore.schema import row_table

__all__ = [
    "INT32",
    "LABEL_CONVENTIONS",
    "MAX_ROWS",
    "TASKS",
    "Spec",
    "decide_storage",
    "first_row",
    "validate_batch",
]

TASKS = ("verification", "matching", "retrieval", "classification")
LABEL_CONVENTIONS = ("pm1", "01", "bool")
INT32 = (-(1 << 31), (1 << 31) - 1)
MAX_ROWS = (1 << 31) - 1  # seq is an INTEGER: the input position within a run's task
@dataclass
class Spec:
    task: str
    columns: dict[str, str]
    labels: str
    negate_score: bool
    float32: bool = False  # every input's score column is float32: stored as such (exact)
    int_groups: bool = False  # every input's group ids are integers
    int_items: bool = False  # every input's item ids are integers of int32 range: stored so

    def source_column(self, ours: str) -> str:
        return self.columns.get(ours, ours)

    @property
    def table(self) -> str:
        """The table this ingest writes its rows to."""
        return row_table(self.int_items, self.float32)


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


def _int32_column(source: Input, column: str) -> bool:
    """Whether ``column`` holds integers that fit an INTEGER (reading it when its type does
    not say)."""
    dtype = source.schema.get(column)
    if dtype is None or not dtype.is_integer():
        return False
    if dtype in (pl.Int8, pl.Int16, pl.Int32, pl.UInt8, pl.UInt16):
        return True
    try:
        bounds = source.frame.select(
            pl.col(column).min().alias("lo"), pl.col(column).max().alias("hi")
        )
        lo, hi = (bounds.collect() if isinstance(bounds, pl.LazyFrame) else bounds).row(0)
    except pl.exceptions.PolarsError:  # the streaming read reports what is wrong
        return False
    return lo is None or (lo >= INT32[0] and hi <= INT32[1])


def first_row(mask: pl.Series) -> int:
    return int(mask.arg_true()[0])


def validate_batch(batch: pl.DataFrame, spec: Spec, label: str, offset: int) -> pl.DataFrame:
    """Check one batch and return it in the stored layout (without seq)."""
    rename = {theirs: ours for ours, theirs in spec.columns.items()}
    missing_sources = [t for t in rename if t not in batch.columns]
    if missing_sources:
        raise InvalidInput(
            f"{label}: missing column {missing_sources[0]!r} named by --column "
            f"(columns: {', '.join(batch.columns)})"
        )
    shadowed = [c for c in batch.columns if c in set(spec.columns) and c not in rename]
    batch = batch.drop(shadowed).rename(rename)
    required = ["item_id", "score", "label"] + ([] if spec.task == "verification" else ["group_id"])
    for col in required:
        if col not in batch.columns:
            raise InvalidInput(
                f"{label}: missing column {col!r} (columns: {', '.join(batch.columns)}); "
                f"map one with --column {col}=NAME"
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
        if dtype.is_nested():
            raise InvalidInput(
                f"{label}: column {col!r} holds {dtype}; ids must be integers or strings"
            )
    group, item = batch["group_id"], batch["item_id"]
    if item.null_count():
        raise InvalidInput(f"{where('item_id', item.is_null())} is empty")
    if spec.task != "verification" and group.null_count():
        raise InvalidInput(
            f"{where('group_id', group.is_null())} is empty (task {spec.task} needs a list id)"
        )

    score = batch["score"]
    if score.dtype == pl.String:  # text files: "nan", "inf", "-inf" or a typo
        parsed = score.str.strip_chars().cast(pl.Float64, strict=False)
        bad = parsed.is_null() & score.is_not_null() & (score.str.strip_chars() != "")
        if bad.any():
            raise InvalidInput(f"{where('score', bad)}: {score[first_row(bad)]!r} is not a number")
        score = parsed
    if not (score.dtype.is_numeric() or score.dtype == pl.Null):
        raise InvalidInput(f"{label}: column 'score' must be numeric, found {score.dtype}")
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

    labels = _labels(batch["label"], spec.labels, label, offset)
    # the stream numbers the lists by this key; integer item ids stay integers
    key = group if spec.int_groups else group.cast(pl.String)
    return pl.DataFrame(
        {
            "list_id": key,
            "item": item.cast(pl.Int32) if spec.int_items else item.cast(pl.String),
            "score": score,
            "label": labels,
        }
    )


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
                    f"under --labels bool (expected {expect})"
                )
            out = lowered == "true"
        else:
            raise InvalidInput(
                f"{label}: column 'label' holds {raw.dtype}; --labels bool expects {expect}"
            )
        return pl.select(
            pl.when(out).then(1).otherwise(-1).cast(pl.Int8).alias("label")
        ).to_series()
    if raw.dtype == pl.Boolean:
        raise InvalidInput(
            f"{label}: column 'label' holds booleans; pass --labels bool to read them as "
            "true = positive, false = negative"
        )
    if not raw.dtype.is_numeric():
        raise InvalidInput(f"{label}: column 'label' must be numeric ({expect}), found {raw.dtype}")
    allowed = [1, -1, 0] if convention == "pm1" else [1, 0]
    as_float = raw.cast(pl.Float64)
    bad = ~as_float.is_in([float(a) for a in allowed])
    if bad.any():
        i = first_row(bad)
        hint = "; pass --labels 01 for 0/1 labels" if convention == "pm1" else ""
        raise InvalidInput(
            f"{label}: column 'label' row {offset + i + 1}: {raw[i]!r} is not a label under "
            f"--labels {convention} (expected {expect}){hint}"
        )
    out = as_float.cast(pl.Int8)
    if convention == "01":
        out = pl.select(
            pl.when(out == 1).then(1).otherwise(-1).cast(pl.Int8).alias("label")
        ).to_series()
    return out.alias("label")
