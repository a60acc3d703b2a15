"""Graded and first-hit ranking metrics: nDCG, reciprocal rank, R-precision, hit@k (NumPy
reference; ``docs/metrics.md``, "Graded relevance and the IR metrics").

The conventions of :mod:`evalstore.core.ranking` hold (``-inf`` = not retrieved, labels +1/-1/0
with 0 ignored, ``n_positives``, the tie policies), and:

- ``gains``: each item's relevance grade (finite, >= 0), NaN where none was given: then 1 for a
  +1 label and 0 otherwise, so that a binary run has the binary nDCG. Ignored items (label 0)
  count nowhere. The exponential variants use ``2^gain - 1`` instead of the gain.
- ``disc(r) = 1 / log2(r + 1)`` for rank ``r = 1, 2, ...`` (trec_eval ``m_ndcg.c``: "i+2 since
  doc i has rank i+1"); at a cut-off k, ``disc_k(r) = disc(r)`` for ``r <= k``, else 0.
- ``grouped`` ties give the **expected value over a uniformly random order of each tie group**:
  a group at ranks ``a..a+n-1`` with ``r`` positives. For DCG each of its items has the
  group's mean discount; the reciprocal rank and hit@k take the distribution of the first
  positive's place in the group, ``P(first at j) = C(n-j, r-1) / C(n, r)``; TP at k (R-precision)
  counts the cut group's positives in proportion, as ``precision_at_k`` does. The other
  policies give one rank per item, and these formulas reduce to the plain ones.

Metrics, per list (NaN when the list has no positive: ``P == 0`` for the binary ones, an ideal
DCG of 0 for nDCG):

- ``ndcg``: ``DCG / IDCG``, ``DCG = sum over retrieved items of gain * disc(rank)``, ``IDCG``
  the DCG of the list's judged items (retrieved or not, and the positives an ``n_positives``
  override counts beyond its +1 labels, of gain 1) in decreasing order of gain: trec_eval
  ``ndcg``. ``ndcg_at_k``: both at cut-off k (trec_eval ``ndcg_cut_k``: the ideal is cut at k
  too). ``ndcg_exp``, ``ndcg_exp_at_k``: with ``2^gain - 1`` (Burges et al. 2005).
- ``recip_rank``: ``1 / rank`` of the first retrieved positive, 0 when none is retrieved
  (trec_eval ``recip_rank``; its mean over lists is MRR).
- ``r_precision``: ``TP_R / R`` with ``R = P``: precision at the number of positives
  (trec_eval ``Rprec``).
- ``hit_at_k``: 1 when a positive is among the top k, else 0 (trec_eval ``success_k``).

>>> import numpy as np
>>> g = np.zeros(4, dtype=int)
>>> s = np.array([4.0, 3.0, 2.0, 1.0])
>>> lab = np.array([-1, 1, 1, -1])
>>> per_list_graded("recip_rank", g, s, lab)[1].tolist()  # first positive at rank 2
[0.5]
>>> gains = np.array([0.0, 2.0, 1.0, 0.0])  # DCG 2/log2(3) + 1/2; ideal 2 + 1/log2(3)
>>> round(float(per_list_graded("ndcg", g, s, lab, gains=gains)[1][0]), 6)
0.669672
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from evalstore.core.points import ranked_rows, ranking_points
from evalstore.core.segments import nan_without_positives, tp_at_k
from evalstore.errors import InvalidInput

__all__ = ["GRADED", "WITH_K", "per_list_graded"]

ArrayLike = npt.ArrayLike
FloatArray = npt.NDArray[np.float64]

#: The metrics of this module
GRADED = (
    "ndcg",
    "ndcg_at_k",
    "ndcg_exp",
    "ndcg_exp_at_k",
    "recip_rank",
    "r_precision",
    "hit_at_k",
)
#: Those with a cut-off k
WITH_K = ("ndcg_at_k", "ndcg_exp_at_k", "hit_at_k")


def per_list_graded(
    metric: str,
    group: ArrayLike,
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    gains: ArrayLike | None = None,
    n_positives: ArrayLike | None = None,
    ties: str = "grouped",
    k: int | None = None,
    order: ArrayLike | None = None,
) -> tuple[np.ndarray, FloatArray]:
    """One metric of :data:`GRADED` for every list at once.

    Args:
        metric: a name of :data:`GRADED`.
        group, scores, labels, n_positives, ties, order: as in
            :func:`evalstore.core.points.ranking_points` (for nDCG the positives that
            ``n_positives`` counts beyond a list's +1 labels join its ideal order, not
            retrieved, each of gain 1: a +1 label's gain when no grade is given).
        gains: (n,) relevance grades, NaN where none was given; None = none at all.
        k: the cut-off of :data:`WITH_K` (an integer >= 1), refused by the others.

    Returns:
        (groups, values): the sorted distinct group codes and the metric of each.

    Raises:
        InvalidInput: unknown metric, a bad k, a negative or infinite gain, and everything
            :func:`~evalstore.core.points.ranking_points` refuses.

    A negative, then a tie of a positive and a negative at ranks 2-3: the top 2 holds the
    positive in half of the tie's orders, so hit@2 is 1 - C(1, 1) / C(2, 1) = 1/2:

    >>> per_list_graded("hit_at_k", [0, 0, 0], [2.0, 1.0, 1.0], [-1, 1, -1], k=2)[1].tolist()
    [0.5]
    """
    if metric not in GRADED:
        raise InvalidInput(f"unknown graded metric {metric!r}; expected one of {', '.join(GRADED)}")
    if metric in WITH_K:
        if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1:
            raise InvalidInput(f"k must be an integer >= 1, got {k!r}")
    elif k is not None:
        raise InvalidInput(f"k applies to {', '.join(WITH_K)} only, not {metric}")
    pts = ranking_points(group, scores, labels, n_positives=n_positives, ties=ties, order=order)
    if metric == "r_precision":
        with np.errstate(divide="ignore", invalid="ignore"):
            value = tp_at_k(pts, pts.n_positives) / pts.n_positives
        return pts.groups, nan_without_positives(value, pts)
    lab = np.asarray(labels).astype(np.int64)
    rr = ranked_rows(group, scores, labels, ties=ties, order=order)
    n_ties = int(rr.tie[-1]) + 1 if rr.tie.size else 0
    size = np.bincount(rr.tie, minlength=n_ties)
    first = np.flatnonzero(np.diff(rr.tie, prepend=-1))  # the first row of each tie group
    tie_list, tie_rank = rr.list_index[first], rr.rank[first]
    if metric in ("recip_rank", "hit_at_k"):
        hits = np.bincount(rr.tie, weights=(lab[rr.rows] == 1), minlength=n_ties)
        value = np.zeros(pts.groups.size)
        seen = np.zeros(pts.groups.size, dtype=bool)
        for t in np.flatnonzero(hits > 0):  # the first group with a positive, list by list
            g = tie_list[t]
            if not seen[g]:
                seen[g] = True
                a, n, r = int(tie_rank[t]), int(size[t]), int(hits[t])
                value[g] = _first_hit(metric, a, n, r, k or 0)
        return pts.groups, nan_without_positives(value, pts)
    codes, n = np.searchsorted(pts.groups, np.asarray(group)), pts.groups.size
    gain, one = _gains(lab, gains, codes, n, exp=metric.startswith("ndcg_exp"))
    disc = 1.0 / np.log2(rr.rank + 1.0)
    if k is not None:
        disc = np.where(rr.rank <= k, disc, 0.0)
    mean_disc = np.bincount(rr.tie, weights=disc, minlength=n_ties) / np.maximum(size, 1)
    gain_sum = np.bincount(rr.tie, weights=gain[rr.rows], minlength=n_ties)
    dcg = np.bincount(tie_list, weights=gain_sum * mean_disc, minlength=n)
    # the positives an n_positives override counts beyond the +1 labels: gain 1, not retrieved
    unlisted = pts.n_positives - np.bincount(codes[lab == 1], minlength=n)
    ideal = _ideal(codes, lab, gain, n, k, np.maximum(unlisted, 0), one)
    with np.errstate(divide="ignore", invalid="ignore"):
        return pts.groups, np.where(ideal > 0, dcg / ideal, np.nan)


def _gains(
    lab: np.ndarray, gains: ArrayLike | None, codes: np.ndarray, n: int, exp: bool
) -> tuple[FloatArray, FloatArray]:
    """Each row's gain: the given grade, else 1 for a +1 label and 0 otherwise; 2^g - 1 for
    the exponential variants, divided by 2^e, the power of two at or above the largest of
    its list (2^(g - e) - 2^-e: no overflow from g = 1024; e = ceil(g) beyond 2^52, where
    2^g - 1 is 2^g as a float). And per list the gain of 1 so divided."""
    base = (lab == 1).astype(np.float64)
    if gains is not None:
        given = np.asarray(gains, dtype=np.float64)
        if given.shape != base.shape:
            raise InvalidInput(f"gains has {given.size} values for {base.size} rows")
        bad = ~np.isnan(given) & ~((given >= 0) & np.isfinite(given))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InvalidInput(f"gain {given[i]} at index {i}: gains are finite numbers >= 0")
        base = np.where(np.isnan(given), base, given).astype(np.float64)
    if not exp:
        return base, np.ones(n)
    judged = lab != 0
    top = np.zeros(n)
    np.maximum.at(top, codes[judged], base[judged])
    with np.errstate(over="ignore"):
        small = np.ceil(np.log2(np.maximum(np.exp2(np.minimum(top, 52.0)) - 1.0, 1.0)))
    e = np.where(top > 52.0, np.ceil(top), small)
    return np.exp2(base - e[codes]) - np.exp2(-e[codes]), np.exp2(-e)


def _ideal(
    codes: np.ndarray,
    lab: np.ndarray,
    gain: FloatArray,
    n: int,
    k: int | None,
    unlisted: np.ndarray,
    one: FloatArray,
) -> FloatArray:
    """The ideal DCG of each list: its judged items (label != 0, retrieved or not) and its
    ``unlisted`` positives (of gain ``one``) in decreasing order of gain, discounted by
    position, cut at k."""
    judged = np.flatnonzero(lab != 0)
    if k is not None:
        unlisted = np.minimum(unlisted, k)  # past k they count nothing
    extra = np.repeat(np.arange(n), unlisted.astype(np.int64))
    c = np.concatenate([codes[judged], extra])
    g = np.concatenate([gain[judged], one[extra]])
    idx = np.lexsort((-g, c))
    c, g = c[idx], g[idx]
    counts = np.bincount(c, minlength=n)
    pos = np.arange(c.size) - (np.cumsum(counts) - counts)[c] + 1
    disc = 1.0 / np.log2(pos + 1.0)
    if k is not None:
        disc = np.where(pos <= k, disc, 0.0)
    return np.bincount(c, weights=g * disc, minlength=n).astype(np.float64)


def _first_hit(metric: str, a: int, n: int, r: int, k: int) -> float:
    """The expected reciprocal rank, or hit@k, of a list whose first tie group with a positive
    holds ``n`` items at ranks ``a..a+n-1``, ``r`` of them positive, in a random order."""
    if metric == "recip_rank":  # sum_j P(first at j) / (a + j - 1)
        total = math.comb(n, r)
        return sum(math.comb(n - j, r - 1) / total / (a + j - 1) for j in range(1, n - r + 2))
    if a > k:
        return 0.0
    m = k - a + 1  # the group's places within the top k
    if m >= n:
        return 1.0
    return 1.0 - math.comb(n - r, m) / math.comb(n, m)  # no positive among the m places
