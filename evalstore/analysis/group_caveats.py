"""What a configuration's statistics say beside them: its t interval across seeds clipped
to the metric's range (an AP's interval from two seeds may reach past 1), saying so or why
not, and that an interval from 2-4 seeds is wide.
"""

from __future__ import annotations

import polars as pl

from evalstore.analysis.clipping import clip_intervals
from evalstore.metrics.ranges import clip_bounds

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
    return clip_intervals(
        frame,
        bounds=clip_bounds,
        count="n_runs",
        few=FEW_SEEDS,
        few_note=lambda n: f"{n} seeds: t interval wide",
    )
