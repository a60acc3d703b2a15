"""What a configuration's statistics say beside them: its t interval across seeds clipped
to the metric's range (an AP's interval from two seeds may reach past 1), saying so or why
not, and that an interval from 2-4 seeds is wide.
"""

from __future__ import annotations

import polars as pl

from evalstore.metrics.ranges import value_range

__all__ = ["FEW_SEEDS", "with_caveats"]


#: Below this many seeds a configuration's t interval is wide (the t quantile of 1-3 degrees
#: of freedom is 3.2-12.7).
FEW_SEEDS = 5


def with_caveats(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (rows of :func:`~evalstore.analysis.configurations.groups`) with
    ``ci_low``/``ci_high`` clipped to the metric's range
    (:func:`~evalstore.metrics.ranges.value_range`) and a ``caveat`` per row: the interval
    clipped (and what it was), not clipped (the metric's range unknown), from 2-4 seeds
    (wide)."""
    lows, highs, caveats = [], [], []
    for metric, low, high, n in frame.select("metric", "ci_low", "ci_high", "n_runs").rows():
        said = []
        if low is not None and high is not None:
            span = value_range(metric)
            if span is None:
                said.append("not clipped: the metric's range is unknown")
            else:
                kept = (max(low, span[0]), high if span[1] is None else min(high, span[1]))
                if kept != (low, high):
                    said.append(f"clipped to the metric's range (was [{low:.4f}, {high:.4f}])")
                low, high = kept
            if n is not None and n < FEW_SEEDS:
                said.append(f"{n} seeds: t interval wide")
        lows.append(low)
        highs.append(high)
        caveats.append("; ".join(said))
    return frame.with_columns(
        ci_low=pl.Series(lows, dtype=pl.Float64),
        ci_high=pl.Series(highs, dtype=pl.Float64),
        caveat=pl.Series(caveats, dtype=pl.String),
    )
