"""Values as the text of a cell, and as JSON holds them; the best rows of metric columns and
the ``<col> sd`` companions every table format folds into ``<col>`` as mean ± sd."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

__all__ = ["SD_SUFFIX", "best_rows", "cell", "jsonable", "mean_sd", "merged"]

SD_SUFFIX = " sd"


def jsonable(value: Any) -> Any:
    """A value as JSON can hold it: NaN and infinities as null, times as ISO 8601 text."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def cell(value: Any) -> str:
    """One value as the text of a table cell."""
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return f"{value:.6g}" if abs(value) >= 1e-4 or value == 0 else f"{value:.3e}"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, (list, tuple)):
        return ", ".join(cell(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, default=str)
    return str(value)


def best_rows(frame: pl.DataFrame, higher: Mapping[str, bool]) -> dict[str, set[int]]:
    """Per column of ``higher`` (column -> higher is better), the rows holding its best
    value (ties all count), within each experiment when the frame has that column."""
    import polars as pl

    out: dict[str, set[int]] = {}
    within = (
        frame["experiment"].to_list() if "experiment" in frame.columns else [None] * frame.height
    )
    for col, up in higher.items():
        if col not in frame.columns:
            continue
        values = frame[col].cast(pl.Float64, strict=False).to_list()
        tops: dict[Any, float] = {}
        for key, v in zip(within, values, strict=True):
            if v is not None and not math.isnan(v):
                tops[key] = v if key not in tops else (max if up else min)(tops[key], v)
        out[col] = {
            i
            for i, (key, v) in enumerate(zip(within, values, strict=True))
            if v is not None and v == tops.get(key)
        }
    return out


def merged(frame: pl.DataFrame) -> list[str]:
    """The columns shown: each ``<col> sd`` folds into ``<col>`` as mean ± sd."""
    return [
        c
        for c in frame.columns
        if not (c.endswith(SD_SUFFIX) and c[: -len(SD_SUFFIX)] in frame.columns)
    ]


def mean_sd(frame: pl.DataFrame, col: str, i: int, plus: str) -> str:
    """Row ``i`` of ``col`` as ``mean<plus>sd`` where its ``<col> sd`` companion has a value."""
    value = frame[col][i]
    sd_col = col + SD_SUFFIX
    text = cell(value) if not isinstance(value, float) else f"{value:.4f}"
    if sd_col in frame.columns and frame[sd_col][i] is not None and value is not None:
        text += f"{plus}{frame[sd_col][i]:.4f}"
    return text
