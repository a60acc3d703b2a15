"""Slow, obviously correct definitions of every registered metric, for the parity test.

Each function is a plain Python loop written from the published formula and the rules of
docs/metrics.md, one list (pair, group) at a time, with no vectorisation: the way scikit-learn keeps
``_average_precision_slow`` next to ``average_precision_score`` in
``sklearn/metrics/tests/test_ranking.py``. They have the registry's uniform signature,
``SLOW[name](inputs, params) -> Result`` (see :mod:`evalstore.metrics.registry`), so that
``tests/test_parity.py`` compares SQL, NumPy core and these loops without knowing any metric.

Rules shared by the ranking metrics (docs/metrics.md, "Ranking metrics"):

- labels +1 / -1 / 0; an item labelled 0 is dropped before ranking (neither hit nor miss);
- a score of ``-inf`` (NULL in the store) is *not retrieved*: it takes no rank, but a positive
  still counts in ``P``;
- ``P`` = the list's +1 labels unless the list's ``n_positives`` overrides it; ``N`` = its -1
  labels, retrieved or not;
- the ranking is a sequence of *tie groups* entering at one threshold each: under ``grouped``
  one group per distinct score (every item scoring at least s_t enters at threshold t); under
  ``optimistic`` / ``pessimistic`` / ``input`` / ``docid`` one item per group, sorted by
  score and then positives first / negatives first / input order / item id as text, the
  greater first;
- at the end of tie group t: ``P_t = TP_t / (TP_t + FP_t)`` and ``R_t = TP_t / P``;
- a list with ``P == 0`` has the value NaN for every metric.

The doctest examples are small hand-worked cases; :func:`one_list` builds a one-list input.
"""

from __future__ import annotations

import contextlib
import io
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

from evalstore.core.detection import DetectionRun
from evalstore.metrics.registry import KeypointRun, Outcomes, Params, RankedLists, Result
from tests.conformance import reference_voc_det as voc_det
from tests.conformance.test_tide import per_class
from tests.conformance.test_tide import reference as tidecv
from tests.definitions_multilabel import SLOW_MULTILABEL
from tests.definitions_pose import SLOW_POSE
from tests.single_label_definitions import SLOW as SINGLE_LABEL

NAN = float("nan")

Slow = Callable[[Any, Params], Result]


def one_list(scores: list[float], labels: list[int], n_positives: int | None = None) -> RankedLists:
    """The input of a single ranked list (group 0) for the examples."""
    override = {} if n_positives is None else {"lists": [0], "n_positives": [n_positives]}
    return RankedLists(
        group=np.zeros(len(scores), dtype=np.int64),
        scores=np.array(scores, dtype=np.float64),
        labels=np.array(labels),
        **{k: np.array(v) for k, v in override.items()},
    )


# ----------------------------------------------------------------------------- ranked lists


class RankedList:
    """One ranked list: its id, its tie groups (lists of labels, in ranking order), P and N."""

    def __init__(self, group: Any, tie_groups: list[list[int]], p: int, n: int) -> None:
        self.group = group
        self.tie_groups = tie_groups
        self.p = p
        self.n = n

    def points(self) -> list[tuple[int, int]]:
        """``(TP_t, FP_t)`` at the end of each tie group t: counts of everything ranked so far."""
        out = []
        tp = fp = 0
        for tie in self.tie_groups:
            for label in tie:
                if label == 1:
                    tp += 1
                else:
                    fp += 1
            out.append((tp, fp))
        return out

    def precision_recall(self) -> list[tuple[float, float]]:
        """``(R_t, P_t)`` at every point (``P > 0``)."""
        return [(tp / self.p, tp / (tp + fp)) for tp, fp in self.points()]


def _tie_groups(items: list[tuple[float, int, int]], ties: str) -> list[list[int]]:
    """Rank the retrieved, non-ignored ``(score, label, seq)`` items into tie groups."""
    retrieved = [(s, lab, seq) for s, lab, seq in items if lab != 0 and s != -math.inf]
    if ties == "grouped":
        groups = []
        for threshold in sorted({s for s, _, _ in retrieved}, reverse=True):
            groups.append([lab for s, lab, _ in retrieved if s == threshold])
        return groups
    if ties == "optimistic":
        ranked = sorted(retrieved, key=lambda it: (-it[0], -it[1]))
    elif ties == "pessimistic":
        ranked = sorted(retrieved, key=lambda it: (-it[0], it[1]))
    elif ties == "input":
        ranked = sorted(retrieved, key=lambda it: (-it[0], it[2]))
    else:
        raise ValueError(f"unknown ties {ties!r}")
    return [[lab] for _, lab, _ in ranked]


def ranked_lists(inputs: RankedLists, ties: str) -> list[RankedList]:
    """Split the rows into lists, one row at a time, and rank each list under ``ties``."""
    items: dict[Any, list[tuple[float, int, int]]] = {}
    group = inputs.group.tolist()
    scores = inputs.scores.tolist()
    labels = inputs.labels.tolist()
    order = list(range(len(group))) if inputs.order is None else inputs.order.tolist()
    if ties == "docid":  # trec_eval: equal scores by document id, the greater (strcmp) first
        assert inputs.items is not None
        text = [str(i).encode() for i in inputs.items.tolist()]
        by_id = sorted(range(len(text)), key=lambda i: text[i], reverse=True)
        order = [0] * len(text)
        for rank, i in enumerate(by_id):
            order[i] = rank
        ties = "input"
    for i in range(len(group)):
        items.setdefault(group[i], []).append((float(scores[i]), int(labels[i]), int(order[i])))
    override = {}
    if inputs.lists is not None and inputs.n_positives is not None:
        for g, n in zip(inputs.lists.tolist(), inputs.n_positives.tolist(), strict=True):
            override[g] = int(n)
    out = []
    for g, rows in items.items():
        p = override.get(g, sum(1 for _, lab, _ in rows if lab == 1))
        n = sum(1 for _, lab, _ in rows if lab == -1)
        out.append(RankedList(g, _tie_groups(rows, ties), p, n))
    return out


def _per_list(inputs: RankedLists, params: Params, value: Callable[[RankedList], float]) -> Result:
    groups, values = [], []
    for lst in ranked_lists(inputs, params.ties):
        groups.append(lst.group)
        values.append(NAN if lst.p == 0 else value(lst))
    return Result(_ids(groups), np.array(values, dtype=np.float64))


def _ids(groups: list[Any]) -> np.ndarray:
    out = np.empty(len(groups), dtype=object)
    out[:] = groups
    return out


def ap(inputs: RankedLists, params: Params) -> Result:
    """Average precision, non-interpolated: ``AP = sum_t (TP_t - TP_{t-1}) / P * P_t``.

    Per rank, ``TP_t - TP_{t-1}`` is 1 at a positive and 0 at a negative, so this is
    ``(1/P) * sum of P_i over the retrieved positives``: VLFeat ``vl_pr`` (as the HPatches
    paper uses it), ``sel = find(diff(recall)) + 1; info.ap = sum(precision(sel)) / p``.
    Under grouped ties it is scikit-learn's ``average_precision_score``,
    ``sum_n (R_n - R_{n-1}) P_n``. Positives never retrieved add 0.

    >>> ap(one_list([3, 2, 1], [1, -1, 1]), Params(ties="input")).value.tolist()
    [0.8333333333333333]
    >>> ap(one_list([2, 1, 1], [-1, 1, 1]), Params(ties="grouped")).value.tolist()
    [0.6666666666666666]
    >>> ap(one_list([2, 1, 1], [-1, 1, 1]), Params(ties="optimistic")).value.tolist()
    [0.5833333333333333]
    """

    def value(lst: RankedList) -> float:
        total = 0.0
        previous_tp = 0
        for tp, fp in lst.points():
            total += (tp - previous_tp) / lst.p * (tp / (tp + fp))
            previous_tp = tp
        return total

    return _per_list(inputs, params, value)


def matlab_colon(a: float, d: float, b: float) -> list[float]:
    """MATLAB's ``a:d:b`` for ``b = a + n*d``: "The first half of the output vector is
    calculated by adding integer multiples of the step 'd' to the left-hand endpoint 'a'. The
    second half is calculated by subtracting multiples of the step 'd' from the right-hand
    endpoint." (MathWorks technical solution 1-4FLI96, "How does the COLON operator work?",
    and its COLONOP M-file; the middle element of an even n is ``(a + b) / 2``.)

    >>> matlab_colon(0.0, 0.1, 1.0)[6:8]
    [0.6, 0.7]
    """
    n = round((b - a) / d)
    out = [0.0] * (n + 1)
    for k in range(n // 2 + 1):
        out[k] = a + k * d
        out[n - k] = b - k * d
    if n % 2 == 0:
        out[n // 2] = (a + b) / 2
    return out


def _eleven_point(inputs: RankedLists, params: Params, grid: list[float]) -> Result:
    def value(lst: RankedList) -> float:
        pr = lst.precision_recall()
        total = 0.0
        for t in grid:
            p = 0.0
            for recall, precision in pr:
                if recall >= t and precision > p:
                    p = precision
            total = total + p / 11.0
        return total

    return _per_list(inputs, params, value)


def ap_voc07(inputs: RankedLists, params: Params) -> Result:
    """PASCAL VOC 2007 11-point AP as the devkit computes it (VOCevalcls.m)::

        ap=0;
        for t=0:0.1:1
            p=max(prec(rec>=t));
            if isempty(p)
                p=0;
            end
            ap=ap+p/11;
        end

    over MATLAB's ``0:0.1:1`` (:func:`matlab_colon`): 0.6 and 0.7 exactly, the fourth value
    0.30000000000000004.

    >>> ap_voc07(one_list([3, 2, 1], [1, 1, 1], n_positives=10), Params()).value.tolist()
    [0.2727272727272727]
    >>> ap_voc07(one_list([5, 4, 3, 2, 1], [1, 1, 1, -1, -1], n_positives=5), Params()).value
    array([0.63636364])
    """
    return _eleven_point(inputs, params, matlab_colon(0.0, 0.1, 1.0))


def ap_voc07_numpy(inputs: RankedLists, params: Params) -> Result:
    """PASCAL VOC 2007 11-point AP as py-faster-rcnn ``voc_ap(rec, prec, use_07_metric=True)``::

        for t in np.arange(0., 1.1, 0.1):
            p = 0 if np.sum(rec >= t) == 0 else np.max(prec[rec >= t])
            ap = ap + p / 11.

    The thresholds are exactly ``np.arange(0, 1.1, 0.1)``: 0.30000000000000004,
    0.6000000000000001 and 0.7000000000000001, so 3 positives found out of 5 do not reach the
    7th (the devkit's 0.6).

    >>> lists = one_list([5, 4, 3, 2, 1], [1, 1, 1, -1, -1], n_positives=5)  # R reaches 3/5
    >>> ap_voc07_numpy(lists, Params()).value.tolist(), ap_voc07(lists, Params()).value.tolist()
    ([0.5454545454545455], [0.6363636363636365])
    """
    return _eleven_point(inputs, params, list(np.arange(0.0, 1.1, 0.1)))


def ap_voc10(inputs: RankedLists, params: Params) -> Result:
    """PASCAL VOC 2010+ AP, the area under the precision envelope (devkit ``VOCap.m``)::

        mrec = [0; rec; 1]; mpre = [0; prec; 0];
        for i = numel(mpre)-1:-1:1, mpre(i) = max(mpre(i), mpre(i+1)); end
        i = find(mrec(2:end) ~= mrec(1:end-1)) + 1;
        ap = sum((mrec(i) - mrec(i-1)) .* mpre(i));

    i.e. ``sum_i (R_i - R_{i-1}) * max_{j >= i} P_j`` with ``R_0 = 0``.

    >>> ap_voc10(one_list([3, 2, 1], [1, -1, 1]), Params(ties="input")).value.tolist()
    [0.8333333333333333]
    >>> ap_voc10(one_list([3, 2, 1], [-1, 1, 1]), Params(ties="input")).value.tolist()
    [0.6666666666666666]
    """

    def value(lst: RankedList) -> float:
        pr = lst.precision_recall()
        mrec = [0.0] + [r for r, _ in pr] + [1.0]
        mpre = [0.0] + [p for _, p in pr] + [0.0]
        for i in range(len(mpre) - 2, -1, -1):
            mpre[i] = max(mpre[i], mpre[i + 1])
        total = 0.0
        for i in range(1, len(mrec)):
            if mrec[i] != mrec[i - 1]:
                total += (mrec[i] - mrec[i - 1]) * mpre[i]
        return total

    return _per_list(inputs, params, value)


def ap_coco(inputs: RankedLists, params: Params) -> Result:
    """COCO 101-point AP, as pycocotools ``COCOeval.accumulate`` (then ``summarize``'s mean)::

        rc = tp / npig; pr = tp / (fp + tp + np.spacing(1))
        for i in range(nd - 1, 0, -1):
            if pr[i] > pr[i - 1]: pr[i - 1] = pr[i]
        inds = np.searchsorted(rc, p.recThrs, side="left")
        q[ri] = pr[pi] for each inds[ri] < nd, else 0;  AP = mean(q)

    with ``recThrs = np.linspace(0, 1, 101)``. As evalstore documents it, the precision here is
    ``TP / (TP + FP)`` without pycocotools' ``+ np.spacing(1)`` (a relative change ~1e-16).

    >>> ap_coco(one_list([3, 2, 1], [1, -1, 1]), Params(ties="input")).value.tolist()
    [0.8349834983498359]
    """

    def value(lst: RankedList) -> float:
        rc = [r for r, _ in lst.precision_recall()]
        pr = [p for _, p in lst.precision_recall()]
        for i in range(len(pr) - 1, 0, -1):
            if pr[i] > pr[i - 1]:
                pr[i - 1] = pr[i]
        q = []
        for t in np.linspace(0.0, 1.0, 101):
            first = 0
            while first < len(rc) and rc[first] < t:  # searchsorted(rc, t, side="left")
                first += 1
            q.append(pr[first] if first < len(rc) else 0.0)
        return sum(q) / len(q)

    return _per_list(inputs, params, value)


def _tp_at_k(lst: RankedList, k: int) -> float:
    """TP among the top k ranks. Ranks past the end are misses. A tie group that rank k cuts
    gives its positives in proportion to the ranks it gets: the mean over the tie's orders."""
    taken = 0
    hits = 0
    for tie in lst.tie_groups:
        positives = sum(1 for label in tie if label == 1)
        if taken + len(tie) > k:
            return hits + (k - taken) * positives / len(tie)
        taken += len(tie)
        hits += positives
    return hits


def _k(params: Params) -> int:
    if params.k is None or params.k < 1:
        raise ValueError(f"k must be an integer >= 1, got {params.k!r}")
    return params.k


def precision_at_k(inputs: RankedLists, params: Params) -> Result:
    """``TP_k / k``: the positives among the top k ranked items, divided by k even when the
    list has fewer ranked items (trec_eval ``P_k``).

    >>> precision_at_k(one_list([3, 2, 1], [1, -1, 1]), Params(k=5)).value.tolist()
    [0.4]
    >>> precision_at_k(one_list([1, 1, 1, 0], [1, -1, -1, 1]), Params(k=2)).value.tolist()
    [0.3333333333333333]
    """
    k = _k(params)
    return _per_list(inputs, params, lambda lst: _tp_at_k(lst, k) / k)


def recall_at_k(inputs: RankedLists, params: Params) -> Result:
    """``TP_k / P`` with ``TP_k`` as in :func:`precision_at_k`.

    >>> recall_at_k(one_list([3, 2, 1], [1, -1, 1], n_positives=4), Params(k=2)).value.tolist()
    [0.25]
    """
    k = _k(params)
    return _per_list(inputs, params, lambda lst: _tp_at_k(lst, k) / lst.p)


def fpr95(inputs: RankedLists, params: Params) -> Result:
    """False positive rate at 95% recall, HardNet ``ErrorRateAt95Recall`` (UBC PhotoTour)::

        labels = labels[np.argsort(distances)]
        threshold_index = np.argmax(np.cumsum(labels) >= recall_point * np.sum(labels))
        FP = np.sum(labels[:threshold_index] == 0); TN = np.sum(labels[threshold_index:] == 0)
        return FP / (FP + TN)

    i.e. ``FP_t / N`` at the first point with ``R_t >= 0.95``, ``N`` = every negative. When the
    retrieved items never reach 95% recall every negative would have to be accepted: 1.0.
    ``N == 0`` -> NaN.

    >>> fpr95(one_list([4, 3, 2, 1], [1, -1, 1, -1]), Params(ties="input")).value.tolist()
    [0.5]
    >>> fpr95(one_list([4, 3, 2, -math.inf], [1, -1, -1, 1]), Params()).value.tolist()
    [1.0]
    """

    def value(lst: RankedList) -> float:
        if lst.n == 0:
            return NAN
        for tp, fp in lst.points():
            if tp / lst.p >= 0.95:
                return fp / lst.n
        return 1.0

    return _per_list(inputs, params, value)


def auc_pr_trapz(inputs: RankedLists, params: Params) -> Result:
    """Area under the PR curve by trapezoids from a leading point (recall 0, precision 1).

    VLFeat ``vl_pr`` ``info.auc`` (vlfeat/vlfeat ``toolbox/plotop/vl_pr.m`` and
    ``toolbox/plotop/vl_tpfp.m``, commit 1b9075fc42fe54b42f0e937f8b9a230d8e2c7701)::

        [scores, perm] = sort(scores, 'descend') ;          % vl_tpfp: a stable sort
        stop = max(find(scores > -inf)) ;                    % -inf: never retrieved
        tp = [0 cumsum(labels > 0)] ;  fp = [0 cumsum(labels < 0)] ;
        small = 1e-10 ;
        recall = tp / max(p, small) ;
        precision = max(tp, small) ./ max(tp + fp, small) ;
        info.auc = 0.5 * sum((precision(1:end-1) + precision(2:end)) .* diff(recall)) ;

    and the HPatches Python benchmark's "ap" (hpatches/hpatches-benchmark
    ``python/utils/metrics.py``, ``pr``, commit e0c993c7756d26129fef47f752f79e4cfe6681aa)::

        perm = np.argsort(-scores, kind='mergesort', axis=0)
        tp = np.hstack((0, np.cumsum(labels == 1)))
        fp = np.hstack((0, np.cumsum(labels == 0)))
        recall = tp / float(np.maximum(p, small))
        precision = np.maximum(tp, small) / np.maximum(tp + fp, small)
        return precision, recall, np.trapz(precision, recall)

    The leading ``tp = fp = 0`` is the point (0, max(0, small) / max(0, small)) = (0, 1).
    Here the points are the rules' (one per tie group), precision is ``TP / (TP + FP)``
    without ``small`` (so 0, not 1e-10 / FP, before the first positive), an item labelled 0
    is dropped (in VLFeat it repeats the previous point: a trapezoid of width 0) and P == 0
    is NaN (VLFeat and HPatches give 0).

    >>> auc_pr_trapz(one_list([2, 1], [-1, 1]), Params(ties="input")).value.tolist()
    [0.25]
    >>> ap(one_list([2, 1], [-1, 1]), Params(ties="input")).value.tolist()
    [0.5]
    >>> auc_pr_trapz(one_list([3, 2, 1], [1, -1, 1]), Params(ties="input")).value.tolist()
    [0.7916666666666666]
    """

    def value(lst: RankedList) -> float:
        recall = [0.0] + [r for r, _ in lst.precision_recall()]
        precision = [1.0] + [p for _, p in lst.precision_recall()]
        total = 0.0
        for i in range(1, len(recall)):
            total += (precision[i - 1] + precision[i]) * (recall[i] - recall[i - 1])
        return 0.5 * total

    return _per_list(inputs, params, value)


def roc_auc(inputs: RankedLists, params: Params) -> Result:
    """Area under the ROC curve by trapezoids, scikit-learn ``roc_auc_score``
    (scikit-learn/scikit-learn ``sklearn/metrics/_ranking.py``, commit
    294090479a3d756f785fc9512a8457f30ccb0ab8)::

        # _binary_clf_curve: one point per distinct score
        desc_score_indices = np.argsort(y_score, kind="mergesort")[::-1]
        distinct_value_indices = np.where(np.diff(y_score))[0]
        threshold_idxs = np.r_[distinct_value_indices, y_true.size - 1]
        tps = stable_cumsum(y_true * weight)[threshold_idxs]
        fps = 1 + threshold_idxs - tps
        # roc_curve: "make sure that the curve starts at (0, 0)"
        tps = np.r_[0, tps];  fps = np.r_[0, fps]
        fpr = fps / fps[-1];  tpr = tps / tps[-1]
        # _binary_roc_auc_score
        return auc(fpr, tpr)                    # auc: trapezoid(y, x)

    with the points of the rules (a tie group under ``grouped``, as there; a rank otherwise):
    ``x_t = FP_t / N``, ``y_t = TP_t / P``, from (0, 0), closed by (1, 1), where everything not
    retrieved (and the positives counted only by ``n_positives``) enters at once, below every
    retrieved item, under every policy. ``N == 0`` -> NaN (scikit-learn: NaN and a warning).

    >>> tied = one_list([3, 2, 2, 1], [1, 1, -1, -1])
    >>> [roc_auc(tied, Params(ties=t)).value.tolist() for t in ("grouped", "optimistic")]
    [[0.875], [1.0]]
    >>> roc_auc(one_list([2, -math.inf, -math.inf], [-1, 1, -1]), Params()).value.tolist()
    [0.25]
    """

    return _roc(inputs, params, closed=True)


def _roc(inputs: RankedLists, params: Params, closed: bool) -> Result:
    def value(lst: RankedList) -> float:
        if lst.n == 0:
            return NAN
        end = [1.0] if closed else []
        fpr = [0.0] + [fp / lst.n for _, fp in lst.points()] + end
        tpr = [0.0] + [tp / lst.p for tp, _ in lst.points()] + end
        area = 0.0
        for i in range(1, len(fpr)):
            area += (fpr[i] - fpr[i - 1]) * (tpr[i] + tpr[i - 1]) / 2
        return area

    return _per_list(inputs, params, value)


def roc_auc_trapz(inputs: RankedLists, params: Params) -> Result:
    """The HPatches Python benchmark's ROC area (python/utils/metrics.py @ cf5f43e2)::

        tp = np.hstack((0, np.cumsum(labels == 1)))   # over the retrieved items only
        fp = np.hstack((0, np.cumsum(labels == 0)))
        tpr = tp / float(np.maximum(p, small)); fpr = fp / float(np.maximum(n, small))
        return fpr, tpr, np.trapz(tpr, fpr)

    i.e. :func:`roc_auc` without the closing point (1, 1): the curve ends at the last
    retrieved item.

    >>> roc_auc_trapz(one_list([2, 1, -math.inf], [1, -1, -1]), Params()).value.tolist()
    [0.5]
    """
    return _roc(inputs, params, closed=False)


def pr_curve(inputs: RankedLists, params: Params) -> Result:
    """The ``(R_t, P_t)`` points of every list with ``P > 0``, in ranking order (``at`` =
    recall, ``value`` = precision).

    >>> curve = pr_curve(one_list([2, 1, 1], [-1, 1, 1]), Params())
    >>> curve.at.tolist(), curve.value.tolist()
    ([0.0, 1.0], [0.0, 0.6666666666666666])
    """
    groups, recalls, precisions = [], [], []
    for lst in ranked_lists(inputs, params.ties):
        if lst.p == 0:
            continue
        for recall, precision in lst.precision_recall():
            groups.append(lst.group)
            recalls.append(recall)
            precisions.append(precision)
    return Result(_ids(groups), np.array(precisions, float), np.array(recalls, float))


# ----------------------------------------------------------------------------- keypoints


def _distance(x: float, y: float, gx: float, gy: float) -> float:
    """``sqrt((x - gx)^2 + (y - gy)^2)``, written as the store computes it."""
    return math.sqrt((x - gx) * (x - gx) + (y - gy) * (y - gy))


def _transfer(h: list[list[float]], x: float, y: float) -> tuple[float, float]:
    """``x' ~ H x``: ``(h11 x + h12 y + h13) / w``, ``(h21 x + h22 y + h23) / w``,
    ``w = h31 x + h32 y + h33`` (Hartley & Zisserman 2.3)."""
    w = h[2][0] * x + h[2][1] * y + h[2][2]
    return (h[0][0] * x + h[0][1] * y + h[0][2]) / w, (h[1][0] * x + h[1][1] * y + h[1][2]) / w


def _distances_by_pair(kp: KeypointRun) -> dict[Any, list[float]]:
    """Every pair id -> the distances of its matches to their ground truth."""
    out: dict[Any, list[float]] = {p: [] for p in kp.pairs.tolist()}
    for i in range(len(kp.pair)):
        d = _distance(float(kp.x1[i]), float(kp.y1[i]), float(kp.gt_x1[i]), float(kp.gt_y1[i]))
        out[kp.pair[i]].append(d)
    return out


def _sweep(params: Params, default: tuple[float, ...]) -> list[float]:
    return [float(v) for v in (default if params.at is None else params.at)]


def _fractions(kp: KeypointRun, at: list[float], hit: Callable[[float, float], bool]) -> Result:
    groups, ats, values = [], [], []
    for pair, distances in _distances_by_pair(kp).items():
        for t in at:
            correct = sum(1 for d in distances if hit(d, t))
            groups.append(pair)
            ats.append(t)
            values.append(correct / len(distances) if distances else 0.0)
    return Result(_ids(groups), np.array(values, float), np.array(ats, float))


def precision_at_sigma(inputs: KeypointRun, params: Params) -> Result:
    """EventPoint's precision: per pair ``p_i(sigma) = (1/M_i) sum_j [d_ij < sigma]`` (strict,
    as its formula writes it), 0 for a pair without matches; sigma = 3, 6, 9 px by default.

    >>> kp = keypoints([("a", 0, 0, 3.0, 0.0, 0.0, 0.0), ("a", 0, 0, 1.0, 0.0, 0.0, 0.0)],
    ...                ["a", "b"])
    >>> precision_at_sigma(kp, Params(at=[3.0])).value.tolist()  # d = 3 is not < 3
    [0.5, 0.0]
    """
    return _fractions(inputs, _sweep(params, (3.0, 6.0, 9.0)), lambda d, t: d < t)


def mma(inputs: KeypointRun, params: Params) -> Result:
    """Mean matching accuracy (D2-Net's HPatches evaluation, ``np.mean(dist <= thr)`` per
    pair): ``a_i(t) = (1/M_i) sum_j [d_ij <= t]`` (inclusive), t = 1..10 px; 0 for a pair
    without matches (D2-Net would give NaN there).

    >>> kp = keypoints([("a", 0, 0, 3.0, 0.0, 0.0, 0.0), ("a", 0, 0, 1.0, 0.0, 0.0, 0.0)],
    ...                ["a", "b"])
    >>> mma(kp, Params(at=[3.0])).value.tolist()  # d = 3 counts
    [1.0, 0.0]
    """
    return _fractions(inputs, _sweep(params, tuple(range(1, 11))), lambda d, t: d <= t)


def _matrix(stack: np.ndarray, i: int) -> list[list[float]] | None:
    """Matrix i of a (P, 3, 3) stack as nested lists, None when it is missing (all NaN)."""
    rows = stack[i].tolist()
    return None if all(math.isnan(v) for row in rows for v in row) else rows


def reprojection_error(inputs: KeypointRun, params: Params) -> Result:
    """EventPoint's reprojection error: per pair, ``(1/M_i) sum_j ||R (x1, y1)_j - (x0, y0)_j||``
    with R the homography image 1 -> 0 estimated at ingest (RANSAC); NaN when the estimation
    failed or the pair has no match."""
    kp = inputs
    groups, values = [], []
    for i, pair in enumerate(kp.pairs.tolist()):
        r = _matrix(kp.r, i)
        errors = []
        for j in range(len(kp.pair)):
            if r is not None and kp.pair[j] == pair:
                tx, ty = _transfer(r, float(kp.x1[j]), float(kp.y1[j]))
                errors.append(_distance(tx, ty, float(kp.x0[j]), float(kp.y0[j])))
        groups.append(pair)
        values.append(sum(errors) / len(errors) if errors else NAN)
    return Result(_ids(groups), np.array(values, float))


def homography_accuracy(
    inputs: KeypointRun, params: Params, superpoint_corners: bool = False
) -> Result:
    """SuperPoint's homography estimation accuracy: warp the corners (0, 0), (w-1, 0),
    (0, h-1), (w-1, h-1) by the estimated and the true homography, average the 4 distances
    (in that corner order); the pair is correct (1.0) if the mean is ``<= eps``, eps = 1, 3,
    5 px. A failed estimation is incorrect (0.0); no true homography or size -> NaN.

    >>> h = np.eye(3)[None]
    >>> e = np.array([[[1.0, 0.0, 2.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]])  # 2 px off
    >>> kp = keypoints([], ["p"], h=h, e=e, width=[640], height=[480])
    >>> homography_accuracy(kp, Params()).value.tolist()
    [0.0, 1.0, 1.0]
    """
    kp = inputs
    groups, ats, values = [], [], []
    for i, pair in enumerate(kp.pairs.tolist()):
        h_true, h_est = _matrix(kp.h, i), _matrix(kp.e, i)
        w, h = float(kp.width[i]), float(kp.height[i])
        error = NAN
        if h_true is not None and h_est is not None and not (math.isnan(w) or math.isnan(h)):
            total = 0.0
            corners = ((0.0, 0.0), (w - 1, 0.0), (0.0, h - 1), (w - 1, h - 1))
            if superpoint_corners:  # SuperPoint: [[0, 0], [0, shape[1]-1], [shape[0]-1, 0], ...]
                corners = ((0.0, 0.0), (0.0, w - 1), (h - 1, 0.0), (h - 1, w - 1))
            for cx, cy in corners:
                ex, ey = _transfer(h_est, cx, cy)
                gx, gy = _transfer(h_true, cx, cy)
                total += _distance(ex, ey, gx, gy)
            error = total / 4
        for eps in _sweep(params, (1.0, 3.0, 5.0)):
            if h_true is None or math.isnan(w) or math.isnan(h):
                value = NAN
            elif h_est is None:
                value = 0.0
            else:
                value = 1.0 if error <= eps else 0.0
            groups.append(pair)
            ats.append(eps)
            values.append(value)
    return Result(_ids(groups), np.array(values, float), np.array(ats, float))


def homography_accuracy_superpoint(inputs: KeypointRun, params: Params) -> Result:
    """:func:`homography_accuracy` over the corners of SuperPoint's compute_homography::

        corners = np.array([[0, 0, 1], [0, shape[1] - 1, 1], [shape[0] - 1, 0, 1],
                            [shape[0] - 1, shape[1] - 1, 1]])

    with ``shape = (h, w)`` and the corners taken as (x, y).

    >>> h = np.eye(3)[None]
    >>> e = np.array([[[1.0, 0.0, 0.0], [0.0, 1.01, 0.0], [0.0, 0.0, 1.0]]])  # y scaled 1%
    >>> kp = keypoints([], ["p"], h=h, e=e, width=[640], height=[480])
    >>> homography_accuracy_superpoint(kp, Params(at=[3.0])).value.tolist()  # y up to 639
    [0.0]
    >>> homography_accuracy(kp, Params(at=[3.0])).value.tolist()  # y up to 479
    [1.0]
    """
    return homography_accuracy(inputs, params, superpoint_corners=True)


def keypoints(
    matches: list[tuple[Any, float, float, float, float, float, float]],
    pairs: list[Any],
    h: np.ndarray | None = None,
    e: np.ndarray | None = None,
    width: list[float] | None = None,
    height: list[float] | None = None,
) -> KeypointRun:
    """A :class:`KeypointRun` from ``(pair, x0, y0, x1, y1, gt_x1, gt_y1)`` rows, for examples."""
    missing = np.full((len(pairs), 3, 3), np.nan)
    cols = list(zip(*matches, strict=True)) if matches else [[] for _ in range(7)]
    return KeypointRun(
        pair=_ids(list(cols[0])),
        **{c: np.array(cols[i + 1], float) for i, c in enumerate(("x0", "y0", "x1", "y1"))},
        gt_x1=np.array(cols[5], float),
        gt_y1=np.array(cols[6], float),
        pairs=_ids(pairs),
        h=missing if h is None else h,
        e=missing if e is None else e,
        r=missing,
        width=np.array(width if width is not None else [np.nan] * len(pairs), float),
        height=np.array(height if height is not None else [np.nan] * len(pairs), float),
    )


# ----------------------------------------------------------------------------- outcomes


def iou(inputs: Outcomes, params: Params) -> Result:
    """Per group ``IoU = TP / (TP + FP + FN)`` (EventPoint); NaN when nothing was counted.

    >>> iou(Outcomes(np.array(["a"]), np.array([3]), np.array([1]), np.array([2])),
    ...     Params()).value.tolist()
    [0.5]
    """
    groups, values = [], []
    for i in range(len(inputs.group)):
        tp, fp, fn = int(inputs.tp[i]), int(inputs.fp[i]), int(inputs.fn[i])
        groups.append(inputs.group[i])
        values.append(tp / (tp + fp + fn) if tp + fp + fn else NAN)
    return Result(_ids(groups), np.array(values, float))


def iou_micro(inputs: Outcomes, params: Params) -> Result:
    """Pooled IoU of the run, ``sum TP / sum (TP + FP + FN)`` over its groups (one row, group
    None); NaN when nothing was counted.

    >>> counts = Outcomes(np.array(["a", "b"]), np.array([3, 1]), np.array([1, 0]),
    ...                   np.array([2, 3]))
    >>> iou_micro(counts, Params()).value.tolist()  # 4 / 10, not the mean of 0.5 and 0.25
    [0.4]
    """
    tp = total = 0
    for i in range(len(inputs.group)):
        tp += int(inputs.tp[i])
        total += int(inputs.tp[i]) + int(inputs.fp[i]) + int(inputs.fn[i])
    return Result(_ids([None]), np.array([tp / total if total else NAN]))


# ----------------------------------------------------------------------------- graded relevance
#
# Gains: the stored grade, else 1 for a +1 label and 0 for a -1 (``2^g - 1`` for the
# exponential variants); ignored items (label 0) count nowhere; disc(r) = 1 / log2(r + 1).
# Under ``grouped`` ties each value is the expectation over a random order of every tie
# group, computed here from the sequential draw of a tie group's items
# (tests/test_graded.py checks those expectations against every order of small lists).


def _gain(label: int, gain: float, exp: bool) -> float:
    """The given grade, else 1 for a +1 label and 0 for a -1; ``2^g - 1`` when ``exp``."""
    g = gain if not math.isnan(gain) else (1.0 if label == 1 else 0.0)
    return 2.0**g - 1.0 if exp else g


def _graded(
    inputs: RankedLists, ties: str
) -> list[tuple[Any, list[list[tuple[int, float]]], list[float], int]]:
    """Per list: its id, its tie groups of ``(label, gain)`` in ranking order, the gains of
    its judged items (retrieved or not, NaN = none given; and a gain of 1 for each positive
    an ``n_positives`` override counts beyond the +1 labels) and P (as :func:`ranked_lists`)."""
    gains = [math.nan] * len(inputs.group) if inputs.gains is None else inputs.gains.tolist()
    rows: dict[Any, list[int]] = {}
    for i, g in enumerate(inputs.group.tolist()):
        rows.setdefault(g, []).append(i)
    out = []
    for lst in ranked_lists(inputs, ties):
        idx = rows[lst.group]
        judged = [_gain(int(inputs.labels[i]), gains[i], False) for i in idx if inputs.labels[i]]
        judged += [1.0] * (lst.p - sum(1 for i in idx if inputs.labels[i] == 1))
        ties_of_rows = _row_ties(inputs, idx, ties)  # the same keys as ranked_lists
        groups = [[(int(inputs.labels[i]), gains[i]) for i in tie] for tie in ties_of_rows]
        out.append((lst.group, groups, judged, lst.p))
    return out


def _row_ties(inputs: RankedLists, idx: list[int], ties: str) -> list[list[int]]:
    """The retrieved, non-ignored rows ``idx`` of one list in tie groups, ranked as
    :func:`_tie_groups` ranks their labels."""
    order = list(range(len(inputs.group))) if inputs.order is None else inputs.order.tolist()
    if ties == "docid":
        assert inputs.items is not None
        text = {i: str(inputs.items[i]).encode() for i in idx}
        by_id = sorted(idx, key=lambda i: text[i], reverse=True)
        order = {i: r for r, i in enumerate(by_id)}  # type: ignore[assignment]
        ties = "input"
    live = [i for i in idx if inputs.labels[i] != 0 and inputs.scores[i] != -math.inf]
    s = {i: float(inputs.scores[i]) for i in live}
    if ties == "grouped":
        return [[i for i in live if s[i] == t] for t in sorted(set(s.values()), reverse=True)]
    key = {
        "optimistic": lambda i: (-s[i], -int(inputs.labels[i]), order[i]),
        "pessimistic": lambda i: (-s[i], int(inputs.labels[i]), order[i]),
        "input": lambda i: (-s[i], order[i]),
    }[ties]
    return [[i] for i in sorted(live, key=key)]


def _ndcg(inputs: RankedLists, params: Params, exp: bool, k: int | None) -> Result:
    groups, values = [], []
    for group, tie_groups, judged, _ in _graded(inputs, params.ties):

        def disc(r: int) -> float:
            return 1.0 / math.log2(r + 1) if k is None or r <= k else 0.0

        dcg, rank = 0.0, 0
        for tie in tie_groups:  # each item of a tie: the mean discount of the tie's ranks
            mean = sum(disc(r) for r in range(rank + 1, rank + len(tie) + 1)) / len(tie)
            dcg += sum(_gain(lab, g, exp) for lab, g in tie) * mean
            rank += len(tie)
        best = sorted((2.0**g - 1.0 if exp else g for g in judged), reverse=True)  # ideal
        ideal = sum(g * disc(i) for i, g in enumerate(best, 1))
        groups.append(group)
        values.append(dcg / ideal if ideal > 0 else NAN)
    return Result(_ids(groups), np.array(values, dtype=np.float64))


def ndcg(inputs: RankedLists, params: Params) -> Result:
    """``DCG / IDCG``, gains linear, no cut-off (trec_eval ``ndcg``).

    >>> lists = one_list([4.0, 3.0, 2.0, 1.0], [-1, 1, 1, -1])
    >>> # (1 / log2(3) + 1 / 2) / (1 + 1 / log2(3))
    >>> round(float(ndcg(lists, Params(ties="input")).value[0]), 6)
    0.693426
    """
    return _ndcg(inputs, params, exp=False, k=None)


def ndcg_at_k(inputs: RankedLists, params: Params) -> Result:
    """``DCG@k / IDCG@k`` (trec_eval ``ndcg_cut_k``)."""
    return _ndcg(inputs, params, exp=False, k=_k(params))


def ndcg_exp(inputs: RankedLists, params: Params) -> Result:
    """nDCG with the gain ``2^grade - 1``."""
    return _ndcg(inputs, params, exp=True, k=None)


def ndcg_exp_at_k(inputs: RankedLists, params: Params) -> Result:
    """nDCG@k with the gain ``2^grade - 1``."""
    return _ndcg(inputs, params, exp=True, k=_k(params))


def _first_hit(
    inputs: RankedLists, params: Params, value: Callable[[int, int, int], float]
) -> Result:
    """``value(a, n, r)`` of the first tie group with a positive (first rank a, n items, r
    positives), 0 when none is retrieved, NaN when P == 0."""
    groups, values = [], []
    for group, tie_groups, _, p in _graded(inputs, params.ties):
        v, rank = 0.0, 0
        for tie in tie_groups:
            r = sum(1 for lab, _ in tie if lab == 1)
            if r:
                v = value(rank + 1, len(tie), r)
                break
            rank += len(tie)
        groups.append(group)
        values.append(NAN if p == 0 else v)
    return Result(_ids(groups), np.array(values, dtype=np.float64))


def _no_positive_in(n: int, r: int, m: int) -> float:
    """The chance that the first m of n items in random order hold none of its r positives,
    drawn one by one."""
    chance = 1.0
    for i in range(m):
        chance *= (n - r - i) / (n - i)
    return chance


def recip_rank(inputs: RankedLists, params: Params) -> Result:
    """``1 / rank`` of the first retrieved positive, 0 when none (trec_eval ``recip_rank``).

    >>> round(float(recip_rank(one_list([3.0, 2.0, 2.0], [-1, 1, -1]), Params()).value[0]), 6)
    0.416667
    """

    def expected(a: int, n: int, r: int) -> float:
        # the first positive is the j-th item of the tie when the j - 1 before are negatives
        return sum(
            _no_positive_in(n, r, j - 1) * r / (n - j + 1) / (a + j - 1)
            for j in range(1, n - r + 2)
        )

    return _first_hit(inputs, params, expected)


def hit_at_k(inputs: RankedLists, params: Params) -> Result:
    """1 when a positive is among the top k, else 0 (trec_eval ``success_k``)."""
    k = _k(params)

    def chance(a: int, n: int, r: int) -> float:
        if a > k:
            return 0.0
        return 1.0 - _no_positive_in(n, r, min(k - a + 1, n))

    return _first_hit(inputs, params, chance)


def r_precision(inputs: RankedLists, params: Params) -> Result:
    """``TP_P / P``: precision at rank P (trec_eval ``Rprec``), TP as in
    :func:`precision_at_k`."""
    return _per_list(inputs, params, lambda lst: _tp_at_k(lst, lst.p) / lst.p)


# ----------------------------------------------------------------------------- detection
#
# COCO's numbers are defined by pycocotools' own code, so their slow definition is pycocotools
# 2.0.11 itself (PyPI; its cocoeval.py is cocodataset/cocoapi PythonAPI/pycocotools/cocoeval.py
# @ 8c9bcc3cf640524c4c20a9c40e89cb6a2f2fa0e9 but for np.float -> float), run on the stored rows
# one category at a time: ``params.catIds = [c]``, then evaluate, accumulate and summarize, whose
# ``_summarize`` is the mean of ``precision[:, :, k, a, m]`` (or ``recall[:, k, a, m]``) over the
# cells > -1, -1 where there is none (NaN here). The 12 numbers in summarize's order
# (``_summarizeDets``, same file):
#
#     stats[0] = _summarize(1)
#     stats[1] = _summarize(1, iouThr=.5, maxDets=self.params.maxDets[2])
#     stats[2] = _summarize(1, iouThr=.75, maxDets=self.params.maxDets[2])
#     stats[3] = _summarize(1, areaRng='small', maxDets=self.params.maxDets[2])
#     stats[4] = _summarize(1, areaRng='medium', maxDets=self.params.maxDets[2])
#     stats[5] = _summarize(1, areaRng='large', maxDets=self.params.maxDets[2])
#     stats[6] = _summarize(0, maxDets=self.params.maxDets[0])
#     stats[7] = _summarize(0, maxDets=self.params.maxDets[1])
#     stats[8] = _summarize(0, maxDets=self.params.maxDets[2])
#     stats[9] = _summarize(0, areaRng='small', maxDets=self.params.maxDets[2])
#     stats[10] = _summarize(0, areaRng='medium', maxDets=self.params.maxDets[2])
#     stats[11] = _summarize(0, areaRng='large', maxDets=self.params.maxDets[2])

COCO_STATS = (
    "coco_ap", "coco_ap50", "coco_ap75", "coco_ap_small", "coco_ap_medium", "coco_ap_large",
    "coco_ar1", "coco_ar10", "coco_ar100", "coco_ar_small", "coco_ar_medium", "coco_ar_large",
)  # fmt: skip
_COCO_RUNS: dict[bytes, dict[Any, list[float]]] = {}  # pycocotools' numbers of recent runs


def _coco_id(text: Any) -> Any:
    """An id as a COCO file writes it: the integer where the text is one, else the text."""
    try:
        return int(text)
    except ValueError:
        return str(text)


def coco_files(run: DetectionRun) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The run as COCO's two files: the annotation file (every image and category, the
    annotations in input order with their ids) and the results list in input order (whose
    ids ``loadRes`` numbers from 1, as ``DetectionRun.detections["id"]`` holds them)."""
    gt, dt = run.ground_truth, run.detections

    def box(cols: Any, i: int) -> list[float]:
        return [float(cols[c][i]) for c in ("x", "y", "w", "h")]

    annotations = [
        {"id": _coco_id(gt["id"][i]), "image_id": _coco_id(gt["image_id"][i]),
         "category_id": _coco_id(gt["category_id"][i]), "bbox": box(gt, i),
         "area": float(gt["area"][i]), "iscrowd": int(gt["iscrowd"][i])}
        for i in range(len(gt["id"]))
    ]  # fmt: skip
    results = [
        {"image_id": _coco_id(dt["image_id"][i]), "category_id": _coco_id(dt["category_id"][i]),
         "bbox": box(dt, i), "score": float(dt["score"][i])}
        for i in range(len(dt["id"]))
    ]  # fmt: skip
    dataset = {
        "images": [{"id": _coco_id(i)} for i in run.images],
        "categories": [{"id": _coco_id(c), "name": str(c)} for c in run.categories],
        "annotations": annotations,
    }
    return dataset, results


def pycocotools_by_category(run: DetectionRun) -> dict[Any, list[float]]:
    """Each category's 12 numbers (summarize's order, NaN for -1): pycocotools run on the
    category alone. One run per stored run: the 12 metrics read the same numbers."""
    dataset, results = coco_files(run)
    key = repr((dataset, results)).encode()
    if key not in _COCO_RUNS:
        out = {}
        with contextlib.redirect_stdout(io.StringIO()):  # pycocotools prints as it goes
            coco = COCO()
            coco.dataset = dataset
            coco.createIndex()
            detections = coco.loadRes(results)
            for cat in dataset["categories"]:
                ev = COCOeval(coco, detections, "bbox")
                ev.params.catIds = [cat["id"]]
                ev.evaluate()
                ev.accumulate()
                ev.summarize()
                out[str(cat["id"])] = [NAN if v == -1 else float(v) for v in ev.stats]
        if len(_COCO_RUNS) >= 8:  # keep the last few runs (a test reads two at a time)
            del _COCO_RUNS[next(iter(_COCO_RUNS))]
        _COCO_RUNS[key] = out
    return _COCO_RUNS[key]


def _coco(name: str) -> Slow:
    index = COCO_STATS.index(name)

    def slow(inputs: DetectionRun, params: Params) -> Result:
        by_cat = pycocotools_by_category(inputs)
        return Result(_ids(list(by_cat)), np.array([v[index] for v in by_cat.values()]))

    slow.__name__ = name
    slow.__doc__ = (
        f"pycocotools' stats[{index}] of each category alone (COCOeval, bbox, summarize)."
    )
    return slow


# VOC's detection APs are defined by their reference code: the slow definitions run the
# transcriptions in tests/conformance/reference_voc_det.py on the devkit's files made from the
# stored rows: rbgirshick/py-faster-rcnn lib/datasets/voc_eval.py @
# 45e0da9a246fab5fd86e8c96dc351be7f145499f (``voc_eval``, verbatim, with the precision of
# d66cc2bff142ca07f521db06ca3e9e10dbc8df20: ``tp / np.maximum(tp + fp, eps)``), and the
# devkit's VOCcode/VOCevaldet.m, npinto/VOCdevkit @ 2b8c01c3ec2c78bb854fa528d2142450a476de3b
# (its 11-point loop) and @ 89f2ff3df5ab5b912b10b845f7458b4940fedb26 (VOCap.m), line by line.
# The lines that define the number:
#
#     # voc_eval: greedy in descending score, IoU with the +1 pixel convention, strictly above
#     iw = np.maximum(ixmax - ixmin + 1., 0.); ih = np.maximum(iymax - iymin + 1., 0.)
#     if ovmax > ovthresh:
#         if not R['difficult'][jmax]:
#             if not R['det'][jmax]: tp[d] = 1.; R['det'][jmax] = 1
#             else: fp[d] = 1.
#     else: fp[d] = 1.
#     % VOCevaldet.m: the same, but at or above the threshold, and sort(-confidence) is stable
#     if ovmax>=VOCopts.minoverlap
#
# ``voc_eval`` sorts with ``np.argsort(-confidence)``, whose order of equal scores is NumPy's
# and the CPU's: test_parity gives its runs distinct scores; evalstore and VOCevaldet.m keep
# input order (MATLAB's sort is stable), and the devkit runs keep their ties.

VOC_DET = {
    "ap_voc07_det": ("voc_eval", True), "ap_voc10_det": ("voc_eval", False),
    "ap_voc07_devkit_det": ("vocevaldet", True), "ap_voc10_devkit_det": ("vocevaldet", False),
}  # fmt: skip


def _corner_boxes(cols: Any) -> list[list[float]]:
    """Each box as VOC writes it, ``[x1, y1, x2, y2]``: the corners as the input wrote them
    where it did, else ``x, y, x + w, y + h`` (COCO's box)."""
    out = []
    for i in range(len(cols["x"])):
        made = [
            cols["x"][i],
            cols["y"][i],
            cols["x"][i] + cols["w"][i],
            cols["y"][i] + cols["h"][i],
        ]
        given = [cols[c][i] if c in cols else NAN for c in ("x1", "y1", "x2", "y2")]
        out.append(
            [float(g) if math.isfinite(g) else float(m) for g, m in zip(given, made, strict=True)]
        )
    return out


def voc_files(run: DetectionRun) -> tuple[list[str], dict[str, list[dict[str, Any]]], list[tuple]]:
    """The run as the devkit's files: the image set (the run's images), each image's objects
    as ``parse_rec`` reads its XML (``name`` / ``class``, ``bbox``, ``difficult``; crowd flags
    are not VOC's) and the detections ``(image, class, score, box)`` in input order."""
    gt, dt = run.ground_truth, run.detections
    images = [str(i) for i in run.images]
    recs: dict[str, list[dict[str, Any]]] = {i: [] for i in images}
    difficult = gt.get("difficult", np.zeros(len(gt["x"]), dtype=bool))
    for i, box in enumerate(_corner_boxes(gt)):
        cls = str(gt["category_id"][i])
        recs[str(gt["image_id"][i])].append(
            {"name": cls, "class": cls, "bbox": box, "difficult": int(difficult[i])}
        )
    dets = [
        (str(dt["image_id"][i]), str(dt["category_id"][i]), float(dt["score"][i]), box)
        for i, box in enumerate(_corner_boxes(dt))
    ]
    return images, recs, dets


def _voc(name: str) -> Slow:
    code, use_07 = VOC_DET[name]

    def slow(inputs: DetectionRun, params: Params) -> Result:
        images, recs, dets = voc_files(inputs)
        values = []
        for cls in (str(c) for c in inputs.categories):
            mine = [(i, s, b) for i, c, s, b in dets if c == cls]
            npos = sum(
                1 for objs in recs.values() for o in objs if o["name"] == cls and not o["difficult"]
            )
            if npos == 0:  # the references divide by npos; evalstore has no value (NULL)
                values.append(NAN)
            elif code == "voc_eval" and not mine:  # voc_eval indexes an empty BB and raises
                values.append(0.0)  # IndexError; evalstore: nothing found scores 0, as
                # VOCevaldet.m does (test_voc_det.check_voc_eval)
            elif code == "voc_eval":
                lines = [" ".join([i, repr(s), *map(repr, b)]) + "\n" for i, s, b in mine]
                r = voc_det.voc_eval(
                    lines, recs, images, cls, use_07_metric=use_07, eps_precision=True
                )
                values.append(float(r["ap"]))
            else:
                ids, scores, boxes = (
                    [i for i, _, _ in mine],
                    [s for _, s, _ in mine],
                    [b for *_, b in mine],
                )
                r = voc_det.vocevaldet(images, [recs[i] for i in images], cls, ids, scores, boxes)
                values.append(float(r["ap07" if use_07 else "ap"]))
        return Result(_ids([str(c) for c in inputs.categories]), np.array(values, dtype=np.float64))

    slow.__name__ = name
    slow.__doc__ = (
        f"{'py-faster-rcnn voc_eval' if code == 'voc_eval' else 'VOCevaldet.m'}'s AP of each class"
        f" ({'11-point' if use_07 else 'area under the envelope'}), transcribed."
    )
    return slow


# TIDE's numbers are tidecv 1.0.1's own (PyPI; dbolya/tide @
# 49a5d2a4aeb56795e93a3ed7cc7e6d25757bb4c1), run on the stored rows by
# tests/conformance/test_tide.py's ``reference``: ``TIDE().evaluate(gt, preds, mode=TIDE.BOX)``
# with its defaults (pos 0.5, background 0.1, 100 detections per image), crowd regions as
# ``add_ignore_region`` of their class; ``run.ap``, ``get_main_errors()`` and
# ``get_special_errors()``, percent. tidecv evaluates the images in the order they were
# registered (equal scores rank in that order): they are registered first, in the order of
# their ids as a COCO file holds them (numeric when every id is an integer's text), as
# evalstore takes them (evalstore/metrics/det_references.py, ``tide_inputs``).

TIDE = {
    "tide_ap": "AP", "tide_cls": "Cls", "tide_loc": "Loc", "tide_both": "Both",
    "tide_dupe": "Dupe", "tide_bkg": "Bkg", "tide_miss": "Miss", "tide_false_pos": "FalsePos",
    "tide_false_neg": "FalseNeg",
}  # fmt: skip
#: tidecv's numbers of recent runs: the run's and each class's (test_tide.per_class)
_TIDE_RUNS: dict[bytes, tuple[dict[str, float], dict[Any, dict[str, float]]]] = {}


def tidecv_numbers(run: DetectionRun) -> tuple[dict[str, float], dict[Any, dict[str, float]]]:
    """tidecv's mAP (``AP``) and each error's dAP (short names) of the run, and the same of
    each class (``tests/conformance/test_tide.py``'s ``per_class``)."""
    gt, dt = run.ground_truth, run.detections
    numeric = all(isinstance(_coco_id(i), int) for i in run.images)
    as_id = _coco_id if numeric else str  # ids as a COCO file holds them, else text
    ids = [as_id(i) for i in run.images]
    det = {k: list(dt[k]) for k in ("image_id", "category_id", "score", "x", "y", "w", "h")}
    truth = {k: list(gt[k]) for k in ("image_id", "category_id", "x", "y", "w", "h", "iscrowd")}
    for cols in (det, truth):
        cols["image_id"] = [as_id(i) for i in cols["image_id"]]
        cols["category_id"] = [str(c) for c in cols["category_id"]]
    key = repr((sorted(ids), det, truth)).encode()
    if key not in _TIDE_RUNS:
        tide_run, main, special, _ = tidecv(det, truth, images=sorted(ids))
        if len(_TIDE_RUNS) >= 8:  # keep the last few runs (a test reads two at a time)
            del _TIDE_RUNS[next(iter(_TIDE_RUNS))]
        _TIDE_RUNS[key] = {"AP": tide_run.ap, **main, **special}, per_class(tide_run)
    return _TIDE_RUNS[key]


def _tide(name: str) -> Slow:
    error = TIDE[name]

    def slow(inputs: DetectionRun, params: Params) -> Result:
        run, classes = tidecv_numbers(inputs)
        cats = [str(c) for c in inputs.categories]  # NaN: a category tidecv never saw
        values = [run[error], *(classes[c][error] if c in classes else np.nan for c in cats)]
        return Result(_ids([None, *cats]), np.array(values, dtype=np.float64))

    slow.__name__ = name
    slow.__doc__ = (
        f"tidecv 1.0.1's {error} of the run (TIDE.evaluate, BOX mode), percent, and of each "
        "category (test_tide.per_class)."
    )
    return slow


#: Registry name -> slow definition, with the signature of ``Metric.reference``.
SLOW: dict[str, Slow] = {
    "ap": ap,
    "ap_voc07": ap_voc07,
    "ap_voc07_numpy": ap_voc07_numpy,
    "ap_voc10": ap_voc10,
    "ap_coco": ap_coco,
    "precision_at_k": precision_at_k,
    "recall_at_k": recall_at_k,
    "fpr95": fpr95,
    "auc_pr_trapz": auc_pr_trapz,
    "roc_auc": roc_auc,
    "roc_auc_trapz": roc_auc_trapz,
    "pr_curve": pr_curve,
    "ndcg": ndcg,
    "ndcg_at_k": ndcg_at_k,
    "ndcg_exp": ndcg_exp,
    "ndcg_exp_at_k": ndcg_exp_at_k,
    "recip_rank": recip_rank,
    "r_precision": r_precision,
    "hit_at_k": hit_at_k,
    "precision_at_sigma": precision_at_sigma,
    "mma": mma,
    "reprojection_error": reprojection_error,
    "homography_accuracy": homography_accuracy,
    "homography_accuracy_superpoint": homography_accuracy_superpoint,
    "iou": iou,
    "iou_micro": iou_micro,
    **{name: _coco(name) for name in COCO_STATS},
    **{name: _voc(name) for name in VOC_DET},
    **{name: _tide(name) for name in TIDE},
    **SINGLE_LABEL,
    **SLOW_MULTILABEL,  # cp ... of1 and their _at_k forms (tests/definitions_multilabel.py)
    **SLOW_POSE,  # pose_auc ... matching_score (tests/definitions_pose.py)
}
