"""Ranking metrics: the NumPy reference definitions (``docs/metrics.md``, "Ranking metrics").

Every metric here is also written in SQL (``sql/metrics/<name>.sql``) and checked against these
functions to 1e-12 relative, so each value is computed with the float formula its docstring gives.

Conventions shared by every function:

- ``scores``: higher = more confident. ``-inf`` means *not retrieved*: the item never takes a
  rank, but a positive still counts in the number of positives ``P``. NaN and ``+inf`` are
  refused (:class:`~evalstore.errors.InvalidInput` naming the index).
- ``labels``: +1 positive, -1 negative, 0 ignored (removed before ranking: neither hit nor miss,
  not in ``P``). Anything else is refused, booleans included (their convention is ambiguous).
- ``n_positives`` overrides ``P`` (HPatches image matching: ``P`` = number of query patches). As
  in VLFeat ``vl_pr`` (NumPositives), it may not be smaller than the list's count of +1 labels.
- ``ties``: ``"grouped"`` (default; scikit-learn: items with equal score enter together, one
  point per distinct score), ``"optimistic"`` (positives first within a tie), ``"pessimistic"``
  (negatives first), ``"input"`` (input order, a stable sort as in MATLAB/VLFeat). The last three
  give one point per rank.
- Points, over the non-ignored retrieved items, in ranking order:
  ``P_i = TP_i / (TP_i + FP_i)`` and ``R_i = TP_i / P`` (float64 divisions of integers).
- A list with ``P == 0`` (after the override) gives NaN for every metric; an empty or all-ignored
  list has ``P == 0`` unless ``n_positives`` says otherwise. :func:`mean_over_lists` skips NaN.

The single-list functions (:func:`ap`, ...) are thin wrappers over the vectorised multi-list code
(:func:`ranking_points`, :func:`per_list`), so there is one implementation. The points, their
validation and sorting live in :mod:`evalstore.core.points`, the per-list helpers in
:mod:`evalstore.core.segments`, each metric as a function of the points of every list in
:mod:`evalstore.core.point_metrics`; this module holds the metrics' definitions.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from evalstore.core.point_metrics import PointsMetric, check_k, of_points
from evalstore.core.points import TIES, Points, one_list, ranking_points
from evalstore.core.segments import (
    COCO_RECALL_THRESHOLDS,
    VOC07_DEVKIT_THRESHOLDS,
    VOC07_RECALL_THRESHOLDS,
    mean_over_lists,
)

__all__ = [
    "COCO_RECALL_THRESHOLDS",
    "TIES",
    "VOC07_DEVKIT_THRESHOLDS",
    "VOC07_RECALL_THRESHOLDS",
    "Points",
    "ap",
    "ap_coco",
    "ap_voc07",
    "ap_voc07_numpy",
    "ap_voc10",
    "auc_pr_trapz",
    "fpr95",
    "mean_over_lists",
    "per_list",
    "pr_curve",
    "precision_at_k",
    "ranking_points",
    "recall_at_k",
    "roc_auc",
    "roc_auc_trapz",
]

ArrayLike = npt.ArrayLike
FloatArray = npt.NDArray[np.float64]


def per_list(
    metric: str | PointsMetric,
    group: ArrayLike,
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_positives: ArrayLike | None = None,
    ties: str = "grouped",
    k: int | None = None,
    order: ArrayLike | None = None,
) -> tuple[np.ndarray, FloatArray]:
    """One metric for every list at once, vectorised (no Python loop per list).

    Args:
        metric: a function of :mod:`evalstore.core.point_metrics`, or its metric's name
            (``ap`` for ``ap_of_points``, ``ap_voc07``, ``ap_voc10``, ``ap_coco``,
            ``precision_at_k``, ``recall_at_k``, ``fpr95``, ``auc_pr_trapz``, ``roc_auc``...).
        group, scores, labels, n_positives, ties, order: as in :func:`ranking_points`.
        k: the cut-off, required by ``precision_at_k``/``recall_at_k``, ignored by the others.

    Returns:
        (groups, values): the sorted distinct group codes and the metric of each (NaN if P == 0).

    Raises:
        InvalidInput: unknown metric, bad k, and everything :func:`ranking_points` refuses.

    >>> per_list("ap", [0, 0, 1, 1], [2, 1, 2, 1], [1, -1, -1, 1])[1].tolist()  # 1/1; (1/2) / 1
    [1.0, 0.5]
    """
    fn = of_points(metric)
    if k is not None:
        check_k(k)  # before the lists: a bad k is named first
    pts = ranking_points(group, scores, labels, n_positives=n_positives, ties=ties, order=order)
    return pts.groups, fn(pts, k)


def _single(
    metric: str,
    scores: ArrayLike,
    labels: ArrayLike,
    n_positives: int | None,
    ties: str,
    k: int | None = None,
) -> float:
    if k is not None:
        check_k(k)  # before the list: a bad k is named first
    return float(of_points(metric)(one_list(scores, labels, n_positives, ties), k)[0])


# ----------------------------------------------------------------------------- single list


def ap(
    scores: ArrayLike, labels: ArrayLike, *, n_positives: int | None = None, ties: str = "grouped"
) -> float:
    """Average precision, non-interpolated: ``sum_t (TP_t - TP_{t-1}) / P * P_t``, ``TP_0 = 0``.

    Per rank this is ``(1/P) * sum of P_i over the retrieved positives`` (VLFeat ``vl_pr``
    info.ap, as in the HPatches paper, with ``ties="input"``); with ``grouped`` ties it is
    scikit-learn's ``average_precision_score`` on +1/-1 labels.

    Edge cases: P == 0 (no positives, empty, all ignored) -> NaN; P > 0 but nothing retrieved
    -> 0.0; positives not retrieved (-inf) or counted only by ``n_positives`` add 0.

    Raises:
        InvalidInput: NaN/+inf score, bad label, unknown ties, n_positives below the +1 count.

    >>> ap([3, 2, 1], [1, -1, 1], ties="input")  # (1/2) * (1 + 2/3)
    0.8333333333333333
    >>> ap([2, 1, 1], [-1, 1, 1])  # grouped: the tie enters at once, (2/2) * (2/3)
    0.6666666666666666
    """
    return _single("ap", scores, labels, n_positives, ties)


def ap_voc07(
    scores: ArrayLike, labels: ArrayLike, *, n_positives: int | None = None, ties: str = "grouped"
) -> float:
    """PASCAL VOC 2007 11-point AP: ``(sum_t max{P_i : R_i >= t}) / 11``, 0 where none.

    ``t`` runs over the devkit's MATLAB ``0:0.1:1`` (:data:`VOC07_DEVKIT_THRESHOLDS`): a point
    with ``R_i = 3/5`` reaches 0.6 (it does not reach numpy's 0.6000000000000001, see
    :func:`ap_voc07_numpy`), and one with ``R_i = 3/10`` does not reach the 4th threshold,
    0.30000000000000004, in either. Since R is non-decreasing, the max is the precision
    envelope ``max_{j >= i} P_j`` at the first i with ``R_i >= t``.

    Edge cases: P == 0 -> NaN; nothing retrieved -> 0.0.

    Three of five positives found, at precision 1: R = 3/5 reaches t = 0, 0.1, ..., 0.6:

    >>> ap_voc07([3, 2, 1, -np.inf, -np.inf], [1, 1, 1, 1, 1])  # 7 / 11
    0.6363636363636364
    """
    return _single("ap_voc07", scores, labels, n_positives, ties)


def ap_voc07_numpy(
    scores: ArrayLike, labels: ArrayLike, *, n_positives: int | None = None, ties: str = "grouped"
) -> float:
    """:func:`ap_voc07` over py-faster-rcnn's grid ``np.arange(0.0, 1.1, 0.1)`` (``voc_ap(...,
    use_07_metric=True)``, :data:`VOC07_RECALL_THRESHOLDS`), whose 0.6000000000000001 and
    0.7000000000000001 a recall of exactly 0.6 or 0.7 does not reach. The list of
    :func:`ap_voc07`'s example reaches t = 0, 0.1, ..., 0.5 only:

    >>> ap_voc07_numpy([3, 2, 1, -np.inf, -np.inf], [1, 1, 1, 1, 1])  # 6 / 11 (ap_voc07: 7 / 11)
    0.5454545454545454
    """
    return _single("ap_voc07_numpy", scores, labels, n_positives, ties)


def ap_voc10(
    scores: ArrayLike, labels: ArrayLike, *, n_positives: int | None = None, ties: str = "grouped"
) -> float:
    """VOC 2010+ AP (devkit ``VOCap.m``): area under the precision envelope.

    ``sum_i (R_i - R_{i-1}) * max_{j >= i} P_j`` with ``R_0 = 0``: the devkit's sentinels
    (0, 0) and (1, 0) add nothing. Recall differences are float differences of the R_i, as in
    the devkit. Edge cases: P == 0 -> NaN; nothing retrieved -> 0.0.

    Points (1/2, 1/2) and (1, 2/3): the envelope lifts the first to 2/3 (AP: (1/2 + 2/3) / 2):

    >>> ap_voc10([3, 2, 1], [-1, 1, 1])  # (1/2) * (2/3) + (1/2) * (2/3)
    0.6666666666666666
    """
    return _single("ap_voc10", scores, labels, n_positives, ties)


def ap_coco(
    scores: ArrayLike, labels: ArrayLike, *, n_positives: int | None = None, ties: str = "grouped"
) -> float:
    """COCO 101-point AP (pycocotools ``COCOeval.accumulate``) for one list.

    ``(sum_k env(first i with R_i >= t_k)) / 101``, 0 where recall never reaches ``t_k``, with
    ``t = np.linspace(0.0, 1.0, 101)`` and ``env_i = max_{j >= i} P_j`` (the index is
    ``np.searchsorted(R, t, side="left")``). Unlike pycocotools, precision is ``TP / (TP + FP)``
    without its ``+ np.spacing(1)`` (a relative change of ~1e-16), so that every metric uses the
    same points. Edge cases: P == 0 -> NaN; nothing retrieved -> 0.0.

    One of two positives found first: R = 1/2 at precision 1 reaches t = 0, 0.01, ..., 0.5:

    >>> ap_coco([2, 1, -np.inf], [1, -1, 1])  # 51 / 101
    0.504950495049505
    """
    return _single("ap_coco", scores, labels, n_positives, ties)


def precision_at_k(
    scores: ArrayLike,
    labels: ArrayLike,
    k: int,
    *,
    n_positives: int | None = None,
    ties: str = "grouped",
) -> float:
    """``TP_k / k`` over the top k ranked (non-ignored, retrieved) items.

    k beyond the ranked items: the missing ranks count as misses (still divided by k, as
    trec_eval P_k). Under ``grouped`` ties a tie group of size ``s`` with ``p`` positives cut by
    k after ``n_before`` items gives ``TP_k = TP_before + (k - n_before) * p / s``, the
    expectation over the orders of the tie. Edge cases: P == 0 -> NaN.

    Raises:
        InvalidInput: k not an integer >= 1, and as :func:`ap`.

    >>> precision_at_k([3, 2, 2], [1, 1, -1], 2)  # 1 + 1 * 1/2 of the tie: 1.5 / 2
    0.75
    >>> precision_at_k([3, 2, 2], [1, 1, -1], 10)  # past the end, misses: 2 / 10
    0.2
    """
    return _single("precision_at_k", scores, labels, n_positives, ties, k)


def recall_at_k(
    scores: ArrayLike,
    labels: ArrayLike,
    k: int,
    *,
    n_positives: int | None = None,
    ties: str = "grouped",
) -> float:
    """``TP_k / P`` with ``TP_k`` as in :func:`precision_at_k`. Edge cases: P == 0 -> NaN.

    >>> recall_at_k([3, 2, 1], [1, -1, 1], 2, n_positives=4)  # 1 of 4 positives in the top 2
    0.25
    """
    return _single("recall_at_k", scores, labels, n_positives, ties, k)


def fpr95(
    scores: ArrayLike, labels: ArrayLike, *, n_positives: int | None = None, ties: str = "grouped"
) -> float:
    """False positive rate at 95% recall (HardNet ``ErrorRateAt95Recall``, UBC PhotoTour).

    ``FP_i / N`` at the first point (ranking order) with ``TP_i / P >= 0.95``; N counts the -1
    labels, retrieved or not. If the retrieved items never reach 95% recall, every negative
    counts as accepted: 1.0. Edge cases: P == 0 or N == 0 -> NaN.

    >>> fpr95([4, 3, 2, 1], [1, -1, 1, -1])  # recall 1 at the third item, after 1 of 2 negatives
    0.5
    >>> fpr95([4, 3, -np.inf], [1, -1, 1])  # recall 1/2 at most: never 95%
    1.0
    """
    return _single("fpr95", scores, labels, n_positives, ties)


def auc_pr_trapz(
    scores: ArrayLike, labels: ArrayLike, *, n_positives: int | None = None, ties: str = "grouped"
) -> float:
    """Area under the PR curve by trapezoids from a leading point (R_0, P_0) = (0, 1).

    ``sum_i (R_i - R_{i-1}) * (P_i + P_{i-1}) * 0.5``: VLFeat ``vl_pr`` ``info.auc`` (vlfeat/vlfeat
    toolbox/plotop/vl_pr.m, 1b9075fc), which the HPatches Python benchmark reports as "ap"
    (``np.trapz(precision, recall)``, hpatches/hpatches-benchmark python/utils/metrics.py,
    e0c993c7); both sort stably, as ``ties="input"``. Per rank a negative adds nothing, a positive
    ``(P_i + P_{i-1}) / (2P)``. Unlike VLFeat, ``P_i = TP_i / (TP_i + FP_i)`` exactly, without
    its ``max(tp, 1e-10)`` (which adds at most 5e-11).

    Edge cases: P == 0 -> NaN (VLFeat: 0); nothing retrieved -> 0.0; the curve stops at the
    last retrieved item, so positives not retrieved add no area.

    >>> auc_pr_trapz([2.0, 1.0], [-1, 1])  # (0, 1), (0, 0), (1, 1/2): 1 * (0 + 1/2) / 2 (AP 0.5)
    0.25
    """
    return _single("auc_pr_trapz", scores, labels, n_positives, ties)


def roc_auc(
    scores: ArrayLike, labels: ArrayLike, *, n_positives: int | None = None, ties: str = "grouped"
) -> float:
    """Area under the ROC curve by trapezoids: scikit-learn ``roc_auc_score`` with ``grouped``
    ties (``_binary_clf_curve`` + ``auc``, sklearn/metrics/_ranking.py, 29409047).

    Over ``(FP_i / N, TP_i / P)`` from (0, 0), closed by (1, 1): ``sum_i (x_i - x_{i-1}) *
    (y_i + y_{i-1}) / 2``, i.e. the fraction of (positive, negative) pairs ranked in order,
    a tie counting one half under ``grouped``. N counts the -1 labels, retrieved or not. What
    is not retrieved (and the positives counted only by ``n_positives``) ranks below every
    retrieved item, all tied, under every policy. Computed as one division of integers,
    ``sum_i (FP_i - FP_{i-1}) * (TP_i + TP_{i-1}) / (2 P N)``, the closing segment included.

    Edge cases: P == 0 or N == 0 -> NaN; nothing retrieved -> 0.5.

    >>> roc_auc([3.0, 2.0, 2.0, 1.0], [1, 1, -1, -1])  # the tied pair counts 1/2: 3.5 / 4
    0.875
    """
    return _single("roc_auc", scores, labels, n_positives, ties)


def roc_auc_trapz(
    scores: ArrayLike, labels: ArrayLike, *, n_positives: int | None = None, ties: str = "input"
) -> float:
    """:func:`roc_auc` without the closing segment: the trapezoids over ``(FP_i / N, TP_i /
    P)`` from (0, 0) stop at the last retrieved item, as the HPatches Python benchmark's
    ``roc()`` (``np.trapz(tpr, fpr)``). Equal to :func:`roc_auc` when everything is retrieved.

    >>> roc_auc_trapz([2.0, 1.0, -np.inf], [1, -1, -1]), roc_auc([2.0, 1.0, -np.inf], [1, -1, -1])
    (0.5, 1.0)
    """
    return _single("roc_auc_trapz", scores, labels, n_positives, ties)


def pr_curve(
    scores: ArrayLike, labels: ArrayLike, *, n_positives: int | None = None, ties: str = "grouped"
) -> tuple[FloatArray, FloatArray]:
    """The (recall, precision) points in ranking order, for plots.

    One point per distinct score under ``grouped`` ties, else one per rank; empty arrays when
    nothing is ranked; recall is NaN when P == 0.

    >>> [a.tolist() for a in pr_curve([3, 2, 2], [1, 1, -1])]  # the tie enters at once
    [[0.5, 1.0], [1.0, 0.6666666666666666]]
    >>> [a.tolist() for a in pr_curve([3, 2, 2], [1, 1, -1], ties="pessimistic")]
    [[0.5, 0.5, 1.0], [1.0, 0.5, 0.6666666666666666]]
    """
    pts = one_list(scores, labels, n_positives, ties)
    return pts.recall, pts.precision
