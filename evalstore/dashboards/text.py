"""Dashboard text (pure): cells and labels as the pages and the figures show them.

:func:`plain` writes a cell as text (the tables and the labels); :func:`esc` escapes text for
Plotly, which renders some HTML tags in its labels; :func:`plot_values` turns a column into
the JSON-ready values of a trace; :func:`cut_label` shortens long category labels.
"""

from __future__ import annotations

import json
import math
from datetime import date, datetime
from typing import Any

import polars as pl

__all__ = ["cut_label", "esc", "plain", "plot_values"]


def esc(value: Any) -> str:
    """Text that Plotly shows literally: it renders some HTML tags in labels, not entities."""
    return str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def plot_values(series: pl.Series) -> list[Any]:
    """A column as JSON-ready values: text escaped for Plotly, times as ISO text, NaN None."""
    if series.dtype.is_temporal():
        return [None if v is None else _time_text(v) for v in series.to_list()]
    if series.dtype.is_numeric():
        return [
            None if v is None or (isinstance(v, float) and not math.isfinite(v)) else v
            for v in series.to_list()
        ]
    return [None if v is None else esc(plain(v)) for v in series.to_list()]


def _time_text(value: Any) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def plain(value: Any) -> str:
    """A cell as text: lists joined, floats short, times without microseconds."""
    if value is None:
        return ""
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return format(value, ".4f") if value == 0 or 1e-3 <= abs(value) < 1e6 else f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(plain(v) for v in value)
    if isinstance(value, (datetime, date)):
        return _time_text(value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


def cut_label(text: str) -> str:
    """``text`` cut to 32 characters, with an ellipsis (the hover keeps labels whole)."""
    return text if len(text) <= 32 else text[:31] + "\u2026"
