"""Per-list operations on :class:`~evalstore.core.points.Points`, vectorised over the lists.

The points of each list are one contiguous segment (``start``, ``count``), so these work on
every list at once without a Python loop per list: segment sums, the previous point, the
precision envelope, the first point at a recall or a rank. :mod:`evalstore.core.ranking` builds
its metrics from them.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from evalstore.core.points import Points

__all__ = [
    "COCO_RECALL_THRESHOLDS",
    "VOC07_DEVKIT_THRESHOLDS",
    "VOC07_RECALL_THRESHOLDS",
    "envelope",
    "first_at_recall",
    "interpolated",
    "mean_over_lists",
    "nan_without_positives",
    "previous",
    "roc_area",
    "segment_sum",
    "tp_at_k",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Exactly as py-faster-rcnn ``voc_ap`` builds them (``np.arange(0.0, 1.1, 0.1)``, i.e.
#: ``k * 0.1``): the 4th value is 0.30000000000000004, the 7th and 8th 0.6000000000000001 and
#: 0.7000000000000001.
VOC07_RECALL_THRESHOLDS = np.arange(0.0, 1.1, 0.1)
#: Exactly as MATLAB builds the VOC2007 devkit's ``0:0.1:1`` (``for t=0:0.1:1`` in
#: ``VOCevalcls.m``): the first half ``a + k*d``, the second half ``b - (n-k)*d`` (MathWorks
#: technical solution 1-4FLI96, "How does the COLON operator work?"), so 0.6 and 0.7 are the
#: doubles nearest 0.6 and 0.7 and the 4th value is still 0.30000000000000004.
VOC07_DEVKIT_THRESHOLDS = np.array(
    [k * 0.1 if 2 * k <= 10 else 1.0 - (10 - k) * 0.1 for k in range(11)]
)
#: Exactly as pycocotools ``Params.recThrs``.
COCO_RECALL_THRESHOLDS = np.linspace(0.0, 1.0, 101)


def segment_sum(values: FloatArray, pts: Points) -> FloatArray:
    """(G,): the sum of ``values`` (one per point) over each list's points, 0 for an empty list."""
    out = np.zeros(pts.count.size)
    nonempty = pts.count > 0
    if nonempty.any():  # reduceat misreads empty segments, so they are left out
        out[nonempty] = np.add.reduceat(values, pts.start[nonempty])
    return out


def previous(values: np.ndarray, pts: Points) -> np.ndarray:
    """The value at the previous point of the same list, 0 at a list's first point."""
    prev = np.zeros_like(values)
    prev[1:] = values[:-1]
    prev[pts.start[pts.count > 0]] = 0
    return prev


def envelope(pts: Points) -> FloatArray:
    """``env_i = max_{j >= i, same list} P_j``, exactly (only float max, no offsets).

    Doubling scan: after the step of width d, env_i covers points i .. i+2d-1 of its list, so
    log2(longest list) vectorised passes suffice. Precisions are >= 0, so 0 is a neutral fill.
    """
    env = pts.precision.copy()
    if env.size == 0:
        return env
    after = np.repeat(pts.start + pts.count, pts.count) - np.arange(1, env.size + 1)
    d, longest = 1, int(pts.count.max())
    while d < longest:
        later = np.where(after[:-d] >= d, env[d:], 0.0)
        np.maximum(env[:-d], later, out=env[:-d])
        d *= 2
    return env


def _first_at_least(
    values: IntArray, pts: Points, targets: IntArray
) -> tuple[IntArray, np.ndarray]:
    """Per list g and column j, the first point of g with ``values >= targets[g, j]``.

    ``values`` must be non-decreasing within each list and >= 0; the search is one global
    ``searchsorted`` over the exact int64 key ``list * big + value``. Returns (index, found).
    """
    n_groups = pts.count.size
    big = int(values.max()) + 2 if values.size else 2
    key = pts.list_index * big + values
    query = np.arange(n_groups)[:, None] * big + np.clip(targets, 0, big - 1)
    idx = np.searchsorted(key, query.ravel(), side="left").reshape(query.shape)
    return idx, idx < (pts.start + pts.count)[:, None]


def first_at_recall(pts: Points, thresholds: FloatArray) -> tuple[IntArray, np.ndarray]:
    """Per list and threshold t, the first point with ``R_i >= t``, ``R_i = tp_i / P`` in float.

    Float division by P is monotone in tp, so this is the first point with ``tp_i >= m``, m the
    least integer with ``m / P >= t`` (found from ``ceil(t * P)`` by exact float steps).
    """
    p = np.where(pts.n_positives > 0, pts.n_positives, 1)[:, None]
    t = thresholds[None, :]
    m = np.clip(np.ceil(t * p).astype(np.int64), 0, p)
    while (down := (m > 0) & ((m - 1) / p >= t)).any():
        m -= down
    while (up := (m < p) & (m / p < t)).any():
        m += up
    return _first_at_least(pts.tp, pts, m)


def interpolated(pts: Points, thresholds: FloatArray) -> FloatArray:
    """(G, T): ``max{P_i : R_i >= t}`` per list and threshold, 0 where recall never reaches t."""
    idx, found = first_at_recall(pts, thresholds)
    if pts.precision.size == 0:
        return np.zeros(found.shape)
    env = envelope(pts)
    return np.where(found, env[np.minimum(idx, env.size - 1)], 0.0)


def tp_at_k(pts: Points, k: int | IntArray) -> FloatArray:
    """TP over the top k ranks (one k, or one per list); a tie group cut by k gives its
    positives in proportion."""
    n = pts.tp + pts.fp
    k = np.broadcast_to(np.asarray(k, dtype=np.int64), (pts.count.size,))
    idx, found = _first_at_least(n, pts, k[:, None].copy())
    idx, found = idx[:, 0], found[:, 0]
    if n.size == 0:
        return np.zeros(pts.count.size)
    last = np.maximum(pts.start + pts.count - 1, 0)
    tp_all = np.where(pts.count > 0, pts.tp[last], 0)
    i = np.minimum(idx, n.size - 1)
    has_prev = found & (i > pts.start)
    tp_prev = np.where(has_prev, pts.tp[i - 1], 0)
    n_prev = np.where(has_prev, n[i - 1], 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        cut = tp_prev + (k - n_prev) * (pts.tp[i] - tp_prev) / (n[i] - n_prev)
    return np.where(found, cut, tp_all.astype(np.float64))


def nan_without_positives(values: FloatArray, pts: Points) -> FloatArray:
    """``values`` (one per list), set to NaN in place for the lists with ``P == 0``."""
    values[pts.n_positives == 0] = np.nan
    return values


def mean_over_lists(values: npt.ArrayLike) -> tuple[float, int, int]:
    """Mean of per-list values leaving NaN (lists without positives) out.

    Returns:
        (mean, n_used, n_skipped); the mean of no list is NaN.

    >>> mean_over_lists([0.5, np.nan, 1.0])  # (1/2 + 1) / 2; the list without positives left out
    (0.75, 2, 1)
    """
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    ok = ~np.isnan(v)
    used = int(ok.sum())
    return (float(np.mean(v[ok])) if used else float("nan")), used, int(v.size - used)


def roc_area(pts: Points, closed: bool) -> FloatArray:
    """Area under the ROC curve through ``(FP_i / N, TP_i / P)`` from (0, 0), ``closed`` by
    (1, 1) or ending at the last point; NaN without negatives or positives. Twice the area
    times P * N, in integers: each point adds d_FP * (TP_before + TP); the rest (not
    retrieved, and positives counted only by the override) joins (FP, TP) to (N, P)."""
    d_fp = pts.fp - previous(pts.fp, pts)
    twice = segment_sum(d_fp * (pts.tp + previous(pts.tp, pts)), pts)
    if closed:
        tp_end, fp_end = np.zeros(pts.count.size, np.int64), np.zeros(pts.count.size, np.int64)
        ends = pts.count > 0
        tp_end[ends] = pts.tp[(pts.start + pts.count - 1)[ends]]
        fp_end[ends] = pts.fp[(pts.start + pts.count - 1)[ends]]
        twice += (pts.n_negatives - fp_end) * (tp_end + pts.n_positives)
    with np.errstate(divide="ignore", invalid="ignore"):
        values = twice / (2.0 * pts.n_positives * pts.n_negatives)
    values[pts.n_negatives == 0] = np.nan
    return nan_without_positives(values, pts)
