"""The ranking metrics as functions of the points of every list at once (NumPy reference).

Each ``<metric>_of_points(pts, k)`` takes the :class:`~evalstore.core.points.Points` of many
lists (:func:`~evalstore.core.points.ranking_points`) and gives one value per list, NaN where
the list has no positive. ``k`` is the cut-off of the @k metrics, which refuse a missing one;
the others ignore it. The formulas, references and edge cases are in the docstrings of the
single-list functions of :mod:`evalstore.core.ranking` (:func:`~evalstore.core.ranking.ap`
for ``ap_of_points``...); the metric registry (``evalstore.metrics.registry``) names each of
these functions with its SQL.

>>> import numpy as np
>>> from evalstore.core.points import ranking_points
>>> pts = ranking_points([0, 0, 0], [3.0, 2.0, 1.0], [1, -1, 1], ties="input")
>>> ap_of_points(pts).tolist()  # (1/2) * (1/1 + 2/3)
[0.8333333333333333]
>>> precision_at_k_of_points(pts, 2).tolist()
[0.5]
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Integral

import numpy as np
import numpy.typing as npt

from evalstore.core.points import Points
from evalstore.core.segments import (
    COCO_RECALL_THRESHOLDS,
    VOC07_DEVKIT_THRESHOLDS,
    VOC07_RECALL_THRESHOLDS,
    envelope,
    first_at_recall,
    interpolated,
    nan_without_positives,
    previous,
    roc_area,
    segment_sum,
    tp_at_k,
)
from evalstore.errors import InvalidInput

__all__ = [
    "PointsMetric",
    "ap_coco_of_points",
    "ap_of_points",
    "ap_voc07_numpy_of_points",
    "ap_voc07_of_points",
    "ap_voc10_of_points",
    "auc_pr_trapz_of_points",
    "check_k",
    "fpr95_of_points",
    "of_points",
    "precision_at_k_of_points",
    "recall_at_k_of_points",
    "roc_auc_of_points",
    "roc_auc_trapz_of_points",
]

FloatArray = npt.NDArray[np.float64]
#: A ranking metric of the points of every list: ``(pts, k) -> one value per list``.
PointsMetric = Callable[[Points, int | None], FloatArray]

_FPR_RECALL = np.array([0.95])


def check_k(k: object) -> int:
    """``k`` as an int, once it is an integer >= 1 (a bool is not).

    Raises:
        InvalidInput: anything else.

    >>> check_k(np.int64(3))
    3
    """
    if not isinstance(k, Integral) or isinstance(k, bool) or k < 1:
        raise InvalidInput(f"k must be an integer >= 1, got {k!r}")
    return int(k)


def ap_of_points(pts: Points, k: int | None = None) -> FloatArray:
    """AP of every list (:func:`evalstore.core.ranking.ap`): ``sum_t (TP_t - TP_{t-1}) / P *
    P_t``; (1/2) * 1 + (1/2) * (2/3) for the first list, none for the second (no positive):

    >>> from evalstore.core.points import ranking_points
    >>> ap_of_points(ranking_points([0, 0, 0, 1], [3, 2, 1, 1], [1, -1, 1, -1])).tolist()
    [0.8333333333333333, nan]
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = (pts.tp - previous(pts.tp, pts)) / pts.n_positives[pts.list_index] * pts.precision
    return nan_without_positives(segment_sum(terms, pts), pts)


def ap_voc07_of_points(pts: Points, k: int | None = None) -> FloatArray:
    """The VOC 2007 devkit's 11-point AP of every list (:func:`evalstore.core.ranking.ap_voc07`):
    3 of 5 positives found at precision 1, R = 3/5 reaches t = 0, 0.1, ..., 0.6, 7 / 11:

    >>> from evalstore.core.points import ranking_points
    >>> ap_voc07_of_points(ranking_points([0] * 5, [3, 2, 1, -np.inf, -np.inf], [1] * 5)).tolist()
    [0.6363636363636364]
    """
    q = interpolated(pts, VOC07_DEVKIT_THRESHOLDS)
    return nan_without_positives(q.sum(axis=1) / 11, pts)


def ap_voc07_numpy_of_points(pts: Points, k: int | None = None) -> FloatArray:
    """py-faster-rcnn's 11-point AP of every list
    (:func:`evalstore.core.ranking.ap_voc07_numpy`): R = 3/5 misses its 0.6000000000000001, so
    t = 0, 0.1, ..., 0.5, 6 / 11:

    >>> from evalstore.core.points import ranking_points
    >>> ap_voc07_numpy_of_points(ranking_points([0] * 5, [3, 2, 1, -np.inf, -np.inf], [1] * 5))
    array([0.54545455])
    """
    q = interpolated(pts, VOC07_RECALL_THRESHOLDS)
    return nan_without_positives(q.sum(axis=1) / 11, pts)


def ap_voc10_of_points(pts: Points, k: int | None = None) -> FloatArray:
    """The VOC 2010 devkit's AP, the area under the precision envelope, of every list
    (:func:`evalstore.core.ranking.ap_voc10`): points (1/2, 1/2), (1, 2/3), the envelope 2/3
    over all of recall:

    >>> from evalstore.core.points import ranking_points
    >>> ap_voc10_of_points(ranking_points([0, 0, 0], [3, 2, 1], [-1, 1, 1])).tolist()
    [0.6666666666666666]
    """
    terms = (pts.recall - previous(pts.recall, pts)) * envelope(pts)
    return nan_without_positives(segment_sum(terms, pts), pts)


def ap_coco_of_points(pts: Points, k: int | None = None) -> FloatArray:
    """COCO's 101-point AP of every list (:func:`evalstore.core.ranking.ap_coco`): R = 1/2
    at precision 1 reaches t = 0, 0.01, ..., 0.5, 51 / 101:

    >>> from evalstore.core.points import ranking_points
    >>> ap_coco_of_points(ranking_points([0, 0, 0], [2, 1, -np.inf], [1, -1, 1])).tolist()
    [0.504950495049505]
    """
    q = interpolated(pts, COCO_RECALL_THRESHOLDS)
    return nan_without_positives(q.sum(axis=1) / 101, pts)


def auc_pr_trapz_of_points(pts: Points, k: int | None = None) -> FloatArray:
    """The PR area by trapezoids from (0, 1) of every list
    (:func:`evalstore.core.ranking.auc_pr_trapz`): (0, 1), (0, 0), (1, 1/2) give 1 * (0 + 1/2) / 2:

    >>> from evalstore.core.points import ranking_points
    >>> auc_pr_trapz_of_points(ranking_points([0, 0], [2, 1], [-1, 1])).tolist()
    [0.25]
    """
    first = np.zeros(pts.tp.size, dtype=bool)
    first[pts.start[pts.count > 0]] = True
    p_before = np.where(first, 1.0, previous(pts.precision, pts))  # leading point (0, 1)
    terms = (pts.recall - previous(pts.recall, pts)) * (pts.precision + p_before) * 0.5
    return nan_without_positives(segment_sum(terms, pts), pts)


def precision_at_k_of_points(pts: Points, k: int | None = None) -> FloatArray:
    """``TP_k / k`` of every list (:func:`evalstore.core.ranking.precision_at_k`): k = 2 takes
    one of the tied pair, half a positive: (1 + 1/2) / 2:

    >>> from evalstore.core.points import ranking_points
    >>> precision_at_k_of_points(ranking_points([0, 0, 0], [3, 2, 2], [1, 1, -1]), 2).tolist()
    [0.75]
    """
    return nan_without_positives(tp_at_k(pts, check_k(k)) / check_k(k), pts)


def recall_at_k_of_points(pts: Points, k: int | None = None) -> FloatArray:
    """``TP_k / P`` of every list (:func:`evalstore.core.ranking.recall_at_k`): 1 of the 4
    positives an override counts is in the top 2:

    >>> from evalstore.core.points import ranking_points
    >>> recall_at_k_of_points(ranking_points([0] * 3, [3, 2, 1], [1, -1, 1], n_positives=[4]), 2)
    array([0.25])
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        return nan_without_positives(tp_at_k(pts, check_k(k)) / pts.n_positives, pts)


def fpr95_of_points(pts: Points, k: int | None = None) -> FloatArray:
    """``FP / N`` at the first point with recall >= 0.95, of every list
    (:func:`evalstore.core.ranking.fpr95`): recall 1 at the third item, after 1 of 2 negatives:

    >>> from evalstore.core.points import ranking_points
    >>> fpr95_of_points(ranking_points([0] * 4, [4, 3, 2, 1], [1, -1, 1, -1])).tolist()
    [0.5]
    """
    idx, found = first_at_recall(pts, _FPR_RECALL)
    idx, found = idx[:, 0], found[:, 0]
    fp = pts.fp[np.minimum(idx, pts.fp.size - 1)] if pts.fp.size else np.zeros(idx.size, np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.where(found, fp / pts.n_negatives, 1.0)
    values[pts.n_negatives == 0] = np.nan
    return nan_without_positives(values, pts)


def roc_auc_of_points(pts: Points, k: int | None = None) -> FloatArray:
    """The ROC area, closed by (1, 1), of every list (:func:`evalstore.core.ranking.roc_auc`):
    3 of the 4 (positive, negative) pairs in order and the tied one counting 1/2, 3.5 / 4:

    >>> from evalstore.core.points import ranking_points
    >>> roc_auc_of_points(ranking_points([0] * 4, [3, 2, 2, 1], [1, 1, -1, -1])).tolist()
    [0.875]
    """
    return roc_area(pts, closed=True)


def roc_auc_trapz_of_points(pts: Points, k: int | None = None) -> FloatArray:
    """The ROC area to the last retrieved item, of every list
    (:func:`evalstore.core.ranking.roc_auc_trapz`): (0, 1) -> (1/2, 1) when a negative is not
    retrieved, 1/2 (roc_auc: 1):

    >>> from evalstore.core.points import ranking_points
    >>> roc_auc_trapz_of_points(ranking_points([0] * 3, [2, 1, -np.inf], [1, -1, -1])).tolist()
    [0.5]
    """
    return roc_area(pts, closed=False)


def of_points(metric: str | PointsMetric) -> PointsMetric:
    """``metric``, or this module's function ``<metric>_of_points`` (``"ap"``:
    :func:`ap_of_points`).

    Raises:
        InvalidInput: no such function.

    >>> of_points("ap") is ap_of_points
    True
    """
    if callable(metric):
        return metric
    found = globals().get(f"{metric}_of_points")
    if found is None:
        known = [n.removesuffix("_of_points") for n in __all__ if n.endswith("_of_points")]
        raise InvalidInput(f"unknown ranking metric {metric!r}; expected one of {', '.join(known)}")
    return found
