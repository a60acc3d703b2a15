"""Intervals cut at what a value can take, and the caveat beside each: the one loop behind
compare's (:mod:`~evalstore.analysis.compare_caveats`) and the configurations'
(:mod:`~evalstore.analysis.group_caveats`) caveat columns.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import polars as pl

__all__ = ["clip_intervals"]


def clip_intervals(
    frame: pl.DataFrame,
    *,
    bounds: Callable[[str], tuple[float, float] | None],
    count: str,
    few: int,
    few_note: Callable[[int], str],
) -> pl.DataFrame:
    """``frame`` with ``ci_low``/``ci_high`` cut to ``bounds(metric)`` (None: the metric's
    range is unknown, so not cut) and a ``caveat`` per row: the interval clipped (and what it
    was), not clipped, and ``few_note(n)`` when its ``count`` column is below ``few``; nothing
    for a row without an interval (None or NaN: no test).

    >>> rows = pl.DataFrame({"metric": ["ap"], "ci_low": [-0.2], "ci_high": [0.5], "n": [3]})
    >>> out = clip_intervals(rows, bounds=lambda m: (0.0, 1.0), count="n", few=5,
    ...                      few_note=lambda n: f"{n} seeds").row(0, named=True)
    >>> out["ci_low"], out["ci_high"], out["caveat"]
    (0.0, 0.5, "clipped to the metric's range (was [-0.2000, 0.5000]); 3 seeds")
    """
    lows, highs, caveats = [], [], []
    for metric, low, high, n in frame.select("metric", "ci_low", "ci_high", count).rows():
        said = []
        if low is not None and high is not None and not (math.isnan(low) or math.isnan(high)):
            span = bounds(metric)
            if span is None:
                said.append("not clipped: the metric's range is unknown")
            else:
                kept = (max(low, span[0]), min(high, span[1]))
                if kept != (low, high):
                    said.append(f"clipped to the metric's range (was [{low:.4f}, {high:.4f}])")
                low, high = kept
            if n is not None and n < few:
                said.append(few_note(n))
        lows.append(low)
        highs.append(high)
        caveats.append("; ".join(said))
    return frame.with_columns(
        ci_low=pl.Series(lows, dtype=pl.Float64),
        ci_high=pl.Series(highs, dtype=pl.Float64),
        caveat=pl.Series(caveats, dtype=pl.String),
    )
