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
    """
    if not isinstance(k, Integral) or isinstance(k, bool) or k < 1:
        raise InvalidInput(f"k must be an integer >= 1, got {k!r}")
    return int(k)


def ap_of_points(pts: Points, k: int | None = None) -> FloatArray:
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = (pts.tp - previous(pts.tp, pts)) / pts.n_positives[pts.list_index] * pts.precision
    return nan_without_positives(segment_sum(terms, pts), pts)


def ap_voc07_of_points(pts: Points, k: int | None = None) -> FloatArray:
    q = interpolated(pts, VOC07_DEVKIT_THRESHOLDS)
    return nan_without_positives(q.sum(axis=1) / 11, pts)


def ap_voc07_numpy_of_points(pts: Points, k: int | None = None) -> FloatArray:
    q = interpolated(pts, VOC07_RECALL_THRESHOLDS)
    return nan_without_positives(q.sum(axis=1) / 11, pts)


def ap_voc10_of_points(pts: Points, k: int | None = None) -> FloatArray:
    terms = (pts.recall - previous(pts.recall, pts)) * envelope(pts)
    return nan_without_positives(segment_sum(terms, pts), pts)


def ap_coco_of_points(pts: Points, k: int | None = None) -> FloatArray:
    q = interpolated(pts, COCO_RECALL_THRESHOLDS)
    return nan_without_positives(q.sum(axis=1) / 101, pts)


def auc_pr_trapz_of_points(pts: Points, k: int | None = None) -> FloatArray:
    first = np.zeros(pts.tp.size, dtype=bool)
    first[pts.start[pts.count > 0]] = True
    p_before = np.where(first, 1.0, previous(pts.precision, pts))  # leading point (0, 1)
    terms = (pts.recall - previous(pts.recall, pts)) * (pts.precision + p_before) * 0.5
    return nan_without_positives(segment_sum(terms, pts), pts)


def precision_at_k_of_points(pts: Points, k: int | None = None) -> FloatArray:
    return nan_without_positives(tp_at_k(pts, check_k(k)) / check_k(k), pts)


def recall_at_k_of_points(pts: Points, k: int | None = None) -> FloatArray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return nan_without_positives(tp_at_k(pts, check_k(k)) / pts.n_positives, pts)


def fpr95_of_points(pts: Points, k: int | None = None) -> FloatArray:
    idx, found = first_at_recall(pts, _FPR_RECALL)
    idx, found = idx[:, 0], found[:, 0]
    fp = pts.fp[np.minimum(idx, pts.fp.size - 1)] if pts.fp.size else np.zeros(idx.size, np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.where(found, fp / pts.n_negatives, 1.0)
    values[pts.n_negatives == 0] = np.nan
    return nan_without_positives(values, pts)


def roc_auc_of_points(pts: Points, k: int | None = None) -> FloatArray:
    return roc_area(pts, closed=True)


def roc_auc_trapz_of_points(pts: Points, k: int | None = None) -> FloatArray:
    return roc_area(pts, closed=False)


def of_points(metric: str | PointsMetric) -> PointsMetric:
    """``metric``, or this module's function ``<metric>_of_points`` (``"ap"``:
    :func:`ap_of_points`).

    Raises:
        InvalidInput: no such function.
    """
    if callable(metric):
        return metric
    found = globals().get(f"{metric}_of_points")
    if found is None:
        known = [n.removesuffix("_of_points") for n in __all__ if n.endswith("_of_points")]
        raise InvalidInput(f"unknown ranking metric {metric!r}; expected one of {', '.join(known)}")
    return found
