"""Dashboard axes (pure): what a reader needs to read a chart without hovering.

:func:`value_range` is a metric's range (0..1 for the fractions: AP, accuracy, MMA...; 0..100
for TIDE's; 0..inf for the pixels of ``reprojection_error``); :func:`clipped` cuts an
interval to it; :func:`time_axis` picks tick labels for a span of times (``14:05``, not
``03:52:08.9995``, for runs of one day); :func:`value_axis` zooms a y axis to the values drawn
(within the metric's range); :func:`wrap_title` fits a chart title into its column (the whole
title on hover); :func:`code_html` shows ```text``` in descriptions as code.
"""

from __future__ import annotations

import html
import math
import re
import textwrap
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from evalstore.metrics import ranges

__all__ = [
    "FEW_LISTS",
    "clipped",
    "code_html",
    "time_axis",
    "value_axis",
    "value_range",
    "wrap_title",
]

#: Below this many lists an interval is drawn with a warning (it says little).
FEW_LISTS = 5
_MINUTE, _HOUR, _DAY = 60_000, 3_600_000, 86_400_000
_CODE = re.compile(r"`([^`]+)`")


def value_range(metric: str | None) -> tuple[float, float] | None:
    """The range of a metric's values (:func:`evalstore.metrics.ranges.value_range`) to clip
    to: (0, 1) for the fractions, (0, 100) for TIDE's, (0, inf) for the pixels of
    ``reprojection_error`` (an error bar stops at 0); None when unknown."""
    return ranges.clip_bounds(metric)


def clipped(
    low: float, high: float, bounds: tuple[float, float] | None
) -> tuple[float, float, bool]:
    """``low``..``high`` cut to ``bounds``, and whether it was cut."""
    if bounds is None:
        return low, high, False
    lo, hi = max(low, bounds[0]), min(high, bounds[1])
    return lo, hi, (lo, hi) != (low, high)


def time_axis(times: Sequence[Any]) -> dict[str, Any]:
    """Tick labels for a date axis of ``times``, chosen from their span: seconds within a few
    minutes, hours and minutes within a day (with the date on hover), days otherwise; never
    a fraction of a second (``dtick`` at least a second)."""
    known = [t.replace(microsecond=0) for t in times if isinstance(t, datetime)]  # as drawn
    if not known:
        return {}
    span = max(known) - min(known)
    # room either side for the labels of the first and the last points
    pad = max(span * 0.12, timedelta(seconds=30))
    shown = {"range": [_stamp(min(known) - pad), _stamp(max(known) + pad)], "autorange": False}
    return {**_ticks((span + 2 * pad).total_seconds() * 1000), **shown}


def _stamp(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S")


def _ticks(span_ms: float) -> dict[str, Any]:
    if span_ms <= 5 * _MINUTE:
        return {"tickformat": "%H:%M:%S", "dtick": max(1000, _nice(span_ms / 5, 1000)),
                "hoverformat": "%Y-%m-%d %H:%M:%S"}  # fmt: skip
    if span_ms <= _DAY:
        return {"tickformat": "%H:%M<br>%b %d", "dtick": _nice(span_ms / 5, _MINUTE),
                "hoverformat": "%Y-%m-%d %H:%M:%S"}  # fmt: skip
    if span_ms <= 90 * _DAY:
        return {"tickformat": "%b %d", "hoverformat": "%Y-%m-%d %H:%M"}
    return {"tickformat": "%Y-%m-%d", "hoverformat": "%Y-%m-%d %H:%M"}


def _nice(step: float, unit: int) -> int:
    """A step of 1, 2, 5, 10, 15, 30 units (or a multiple of 60 of them) at least ``step``."""
    for k in (1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720):
        if unit * k >= step:
            return unit * k
    return unit * 1440


def value_axis(
    lows: Sequence[float | None], highs: Sequence[float | None], bounds: tuple[float, float] | None
) -> dict[str, Any]:
    """A y range around the values drawn (``lows`` .. ``highs``: the marks with their error
    bars), padded by a tenth of their span and kept within the metric's ``bounds``; {} when
    nothing is drawn."""
    lo = [v for v in lows if v is not None and math.isfinite(v)]
    hi = [v for v in highs if v is not None and math.isfinite(v)]
    if not lo or not hi:
        return {}
    low, high = min(lo), max(hi)
    pad = max((high - low) * 0.1, 0.01 if bounds else abs(high) * 0.05 or 0.05)
    low, high = low - pad, high + pad
    if bounds is not None:
        low, high = max(low, bounds[0] - 0.01), min(high, bounds[1] + 0.01)
    return {"range": [low, high], "autorange": False}


def wrap_title(text: str, width: int, lines: int = 2) -> tuple[str, str | None]:
    """``text`` (escaped for Plotly already; ``<br>`` where it breaks already) wrapped at
    ``width`` characters, each of its lines into at most ``lines`` lines, joined by ``<br>``,
    the last cut with an ellipsis if need be; and the whole text for the hover when it was
    cut (else None)."""
    out: list[str] = []
    cut = False
    for segment in text.split("<br>"):
        parts = textwrap.wrap(segment, width, break_long_words=True, break_on_hyphens=False)
        if len(parts) > lines:
            parts = [*parts[: lines - 1], parts[lines - 1][: width - 1] + "\u2026"]
            cut = True
        out += parts or [""]
    return "<br>".join(out), (text if cut else None)


def code_html(text: str) -> str:
    """``text`` escaped for HTML, with ```name``` shown as ``<code>name</code>``."""
    return _CODE.sub(r"<code>\1</code>", html.escape(text))
