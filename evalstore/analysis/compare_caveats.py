"""What a comparison's statistics say beside them: each interval of a difference clipped to
what the metric's range allows (a difference of two APs lies in [-1, 1]; a t interval of few
seeds may reach past it), saying so, or saying why it is not (a metric whose range is not
known: a user's metric, a logged value), and a warning on an interval from fewer than
:data:`FEW_LISTS` lists. ``evalstore compare`` and the UI's Compare page show them.
"""

from __future__ import annotations

import polars as pl

from evalstore.analysis.clipping import clip_intervals
from evalstore.analysis.intervals import FEW_LISTS
from evalstore.metrics.ranges import clip_bounds

__all__ = ["FEW_LISTS", "with_caveats"]


def with_caveats(result: pl.DataFrame) -> pl.DataFrame:
    """``result`` (compare's rows) with ``ci_low`` and ``ci_high`` clipped to the range a
    difference of the metric can take and a ``caveat`` per row: the interval clipped (and
    what it was), not clipped (its metric's range unknown), from fewer than FEW_LISTS lists.

    >>> rows = pl.DataFrame({"metric": ["ap"], "ci_low": [-1.2], "ci_high": [0.3],
    ...                      "n_lists": [2]})
    >>> out = with_caveats(rows).row(0, named=True)
    >>> out["ci_low"], out["ci_high"]
    (-1.0, 0.3)
    >>> print(out["caveat"])
    clipped to the metric's range (was [-1.2000, 0.3000]); 2 list(s): interval unreliable
    """
    return clip_intervals(
        result,
        bounds=_difference_bounds,
        count="n_lists",
        few=FEW_LISTS,
        few_note=lambda n: f"{n} list(s): interval unreliable",
    )


def _difference_bounds(metric: str) -> tuple[float, float] | None:
    """What a difference of two values of ``metric`` can take: +-(its range's width)."""
    span = clip_bounds(metric)
    if span is None:
        return None
    width = span[1] - span[0]
    return -width, width
