"""One list ranked under ``grouped`` ties for the item bootstrap
(:mod:`~evalstore.analysis.reweighting`), quicker than the general ranking of many lists."""

from __future__ import annotations

import numpy as np

from evalstore.core.points import RankedRows

__all__ = ["one_grouped_list"]


def one_grouped_list(labels: np.ndarray, scores: np.ndarray) -> RankedRows:
    """:func:`~evalstore.core.points.ranked_rows` of one list under ``grouped`` ties (finite
    or ``-inf`` scores), by an unstable sort (a third of the stable one's time): the order
    within a tie group, which ``ranked_rows`` keeps in input order, changes no value, as the
    group's items share its point."""
    kept = (labels != 0) & (scores > -np.inf)
    every = bool(kept.all())  # then no row is left out: no gathers (fewer fresh pages)
    keep = None if every else np.flatnonzero(kept)
    s = scores + 0.0 if keep is None else scores[keep] + 0.0  # -0.0 and 0.0 tie
    by = np.argsort(np.negative(s, out=s))  # the negated scores: equal where the scores are
    s = s[by]
    new = np.ones(s.size, dtype=bool)
    np.not_equal(s[1:], s[:-1], out=new[1:])
    m = s.size
    tie = np.cumsum(new)
    tie -= 1
    return RankedRows(
        groups=np.zeros(1, dtype=np.int64),
        rows=by if keep is None else keep[by],
        list_index=np.zeros(m, dtype=np.int64),
        rank=np.arange(1, m + 1, dtype=np.int64),
        tie=tie,
    )
