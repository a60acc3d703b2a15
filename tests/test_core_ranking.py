"""Tests of evalstore.core.ranking, the NumPy reference of the ranking metrics.

Three kinds of checks: hand-worked lists (arithmetic in the comments), slow transcriptions of the
reference code (py-faster-rcnn ``voc_ap``, pycocotools ``accumulate``, HardNet, VLFeat ``vl_pr``,
the HPatches Python benchmark, scikit-learn),
and the vectorised multi-list path against a Python loop of the single-list functions.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import auc, average_precision_score, precision_recall_curve, roc_auc_score

from evalstore.core import point_metrics, ranking
from evalstore.core.ranking import (
    COCO_RECALL_THRESHOLDS,
    VOC07_RECALL_THRESHOLDS,
    ap,
    ap_coco,
    ap_voc07,
    ap_voc07_numpy,
    ap_voc10,
    auc_pr_trapz,
    fpr95,
    mean_over_lists,
    per_list,
    pr_curve,
    precision_at_k,
    ranking_points,
    recall_at_k,
    roc_auc,
)
from evalstore.core.ranking import (
    TIES as ALL_TIES,
)
from evalstore.errors import InvalidInput
from tests.conformance.reference_hpatches import tpfp as hpatches_tpfp
from tests.conformance.reference_voc import voc07_devkit, voc_ap

INF = math.inf
#: The policies the one-list functions take (docid needs the item ids: test_parity covers it).
TIES = tuple(t for t in ALL_TIES if t != "docid")
PER_RANK = ("optimistic", "pessimistic", "input")


def _single(metric: str, k: int = 3) -> Callable[..., float]:
    """The single-list function of a metric, with k bound for the @k metrics."""
    fn = getattr(ranking, metric)
    if metric in ("precision_at_k", "recall_at_k"):
        return lambda s, lab, **kw: fn(s, lab, k, **kw)
    return fn


# ----------------------------------------------------------------------------- transcriptions


def ranked_labels(scores, labels, ties: str) -> np.ndarray:
    """Labels of the retrieved, non-ignored items in a per-rank policy's order (slow, obvious)."""
    s, lab = np.asarray(scores, dtype=float), np.asarray(labels)
    keep = (lab != 0) & (s > -INF)
    s, lab = s[keep], lab[keep]
    tiebreak = {"input": np.zeros(lab.size), "optimistic": -lab, "pessimistic": lab}[ties]
    return lab[np.lexsort((tiebreak, -s))]  # lexsort is stable: then input position


def rec_prec(ranked: np.ndarray, npos: int) -> tuple[np.ndarray, np.ndarray]:
    """py-faster-rcnn voc_eval: per-rank cumsum, rec = tp / npos, prec = tp / max(tp + fp, eps)."""
    tp = np.cumsum(ranked == 1).astype(float)
    fp = np.cumsum(ranked == -1).astype(float)
    rec = tp / float(npos)
    prec = tp / np.maximum(tp + fp, np.finfo(np.float64).eps)
    return rec, prec


def coco_ap(ranked: np.ndarray, npig: int) -> float:
    """pycocotools COCOeval.accumulate for one category/area/maxDet/IoU, transcribed."""
    rec_thrs = np.linspace(0.0, 1.00, int(np.round((1.00 - 0.0) / 0.01)) + 1, endpoint=True)
    tp = np.cumsum(ranked == 1).astype(dtype=float)
    fp = np.cumsum(ranked == -1).astype(dtype=float)
    nd = len(tp)
    rc = tp / npig
    pr = tp / (fp + tp + np.spacing(1))
    q = np.zeros((len(rec_thrs),))
    pr = pr.tolist()
    q = q.tolist()
    for i in range(nd - 1, 0, -1):
        if pr[i] > pr[i - 1]:
            pr[i - 1] = pr[i]
    inds = np.searchsorted(rc, rec_thrs, side="left")
    try:
        for ri, pi in enumerate(inds):
            q[ri] = pr[pi]
    except IndexError:  # pycocotools: a bare except
        pass
    return float(np.mean(np.array(q)))


def hardnet_fpr95(labels01: np.ndarray, scores: np.ndarray) -> float:
    """HardNet ErrorRateAt95Recall (labels 1/0, higher score = match), transcribed."""
    recall_point = 0.95
    labels01 = labels01[np.argsort(-scores, kind="stable")]
    threshold_index = np.argmax(np.cumsum(labels01) >= recall_point * np.sum(labels01))
    fp = np.sum(labels01[:threshold_index] == 0)
    tn = np.sum(labels01[threshold_index:] == 0)
    return float(fp) / float(fp + tn)


def vl_pr_auc(labels, scores, num_positives=None) -> float:
    """VLFeat vl_pr ``info.auc`` with vl_tpfp (toolbox/plotop/, commit 1b9075fc), from MATLAB:
    ``sort(scores, 'descend')`` is stable; labels 0 stay in the ranking (repeated points)."""
    labels, scores = np.asarray(labels, dtype=float), np.asarray(scores, dtype=float)
    p = np.sum(labels > 0)
    if num_positives is not None:
        p = num_positives
    perm = np.argsort(-scores, kind="stable")
    scores = scores[perm]
    stop = np.max(np.flatnonzero(scores > -INF)) + 1  # stop = max(find(scores > -inf))
    labels = labels[perm[:stop]]
    tp = np.concatenate(([0], np.cumsum(labels > 0)))
    fp = np.concatenate(([0], np.cumsum(labels < 0)))
    small = 1e-10
    recall = tp / max(p, small)
    precision = np.maximum(tp, small) / np.maximum(tp + fp, small)
    return float(0.5 * np.sum((precision[:-1] + precision[1:]) * np.diff(recall)))


def hpatches_pr_ap(scores, labels, numpos=None) -> float:
    """hpatches-benchmark ``pr``: its "ap" (np.trapz, renamed np.trapezoid in NumPy 2)."""
    tp, fp, p, _n, _perm = hpatches_tpfp(scores, labels, numpos)
    small = 1e-10
    recall = tp / float(np.maximum(p, small))
    precision = np.maximum(tp, small) / np.maximum(tp + fp, small)
    return float(np.trapezoid(precision, recall))


def hpatches_roc_auc(scores, labels) -> float:
    """hpatches-benchmark ``roc``: the "auc" of balanced verification."""
    tp, fp, p, n, _perm = hpatches_tpfp(scores, labels)
    small = 1e-10
    tpr = tp / float(np.maximum(p, small))
    fpr = fp / float(np.maximum(n, small))
    return float(np.trapezoid(tpr, fpr))


def sklearn_roc_auc(scores, labels, n_positives=None) -> float:
    """roc_auc_score over the non-ignored items, with what evalstore ranks at the bottom (-inf:
    not retrieved; the positives only ``n_positives`` counts) given one score below all."""
    keep = labels != 0
    s, lab = scores[keep], labels[keep]
    retrieved = s > -INF
    bottom = s[retrieved].min() - 1.0 if retrieved.any() else 0.0
    extra = 0 if n_positives is None else n_positives - int(np.sum(lab == 1))
    s = np.concatenate([np.where(retrieved, s, bottom), np.full(extra, bottom)])
    lab = np.concatenate([lab, np.ones(extra, dtype=lab.dtype)])
    return float(roc_auc_score(lab, s))


# ----------------------------------------------------------------------------- strategies

TIED_SCORES = st.sampled_from([0.0, 1.0, 2.0, 3.0])
ANY_SCORES = st.sampled_from([-INF, -1.0, -0.0, 0.0, 0.5, 1.0, 1.0 + 2**-52, 2.0])


@st.composite
def one_list(draw, scores=ANY_SCORES, labels=(-1, 0, 1), min_size=0, max_size=12):
    n = draw(st.integers(min_size, max_size))
    s = draw(st.lists(scores, min_size=n, max_size=n))
    lab = draw(st.lists(st.sampled_from(labels), min_size=n, max_size=n))
    return np.array(s, dtype=float), np.array(lab, dtype=np.int64)


@st.composite
def many_lists(draw):
    """Rows of 1-5 lists in any row order, with ties, ignored rows, -inf, overrides, an order."""
    codes = draw(
        st.lists(
            st.one_of(st.integers(-3, 12), st.integers(-(10**12), 10**12)),
            min_size=1,
            max_size=5,
            unique=True,
        )
    )
    rows = []
    for code in codes:
        s, lab = draw(one_list(min_size=1, max_size=8))
        rows += [(code, a, b) for a, b in zip(s, lab, strict=True)]
    rows = draw(st.permutations(rows))
    group = np.array([r[0] for r in rows], dtype=np.int64)
    scores = np.array([r[1] for r in rows])
    labels = np.array([r[2] for r in rows], dtype=np.int64)
    override = None
    if draw(st.booleans()):
        uniq = np.unique(group)
        extra = draw(st.lists(st.integers(0, 2), min_size=uniq.size, max_size=uniq.size))
        override = np.array(
            [np.sum((group == g) & (labels == 1)) + e for g, e in zip(uniq, extra, strict=True)]
        )
    order = draw(st.one_of(st.none(), st.permutations(range(len(rows))).map(np.array)))
    return group, scores, labels, override, order


# ----------------------------------------------------------------------------- ap


@pytest.mark.parametrize(
    ("scores", "labels", "kwargs", "expected"),
    [
        # VLFeat vl_pr: ranks +,-,+ ; precision at the positives 1/1 and 2/3 -> (1/2)(1 + 2/3)
        ([3, 2, 1], [1, -1, 1], {"ties": "input"}, 5 / 6),
        # same ranking, P = 4 (HPatches: query patches): (1/4)(1 + 2/3) = 5/12
        ([3, 2, 1], [1, -1, 1], {"ties": "input", "n_positives": 4}, 5 / 12),
        # the positive scored -inf is not retrieved but counts in P = 2: (1/2)(1/1) = 1/2
        ([3, 2, -INF], [1, -1, 1], {}, 0.5),
        # the ignored item is removed before ranking: +,+ -> (1/2)(1 + 1) = 1
        ([3, 2, 1], [1, 0, 1], {}, 1.0),
        # grouped: s=2 admits the negative (TP 0, FP 1), s=1 admits both positives
        # (TP 2, FP 1): (2 - 0)/2 * 2/3 = 2/3
        ([2, 1, 1], [-1, 1, 1], {}, 2 / 3),
        # P > 0 and nothing retrieved
        ([-INF, -INF], [1, -1], {}, 0.0),
    ],
)
def test_ap_hand_worked(scores, labels, kwargs, expected):
    assert ap(scores, labels, **kwargs) == pytest.approx(expected, rel=1e-15)


@pytest.mark.slow  # hypothesis: 200 examples
@settings(max_examples=examples(200), deadline=None)
@given(one_list(scores=TIED_SCORES, labels=(-1, 1), min_size=1, max_size=30))
def test_ap_grouped_equals_sklearn(data):
    scores, labels = data
    if not (labels == 1).any():
        labels[0] = 1
    assert ap(scores, labels) == pytest.approx(
        average_precision_score(labels == 1, scores), rel=1e-12
    )


def test_tie_policies_hand_worked():
    # [1,1,1] with labels -,+,+ : one tie of all three.
    # optimistic +,+,- -> (1/2)(1 + 1) = 1; grouped one point TP 2 FP 1 -> 2/3;
    # pessimistic -,+,+ -> (1/2)(1/2 + 2/3) = 7/12; input = array order = pessimistic here.
    values = {t: ap([1, 1, 1], [-1, 1, 1], ties=t) for t in TIES}
    assert values == pytest.approx(
        {"optimistic": 1.0, "grouped": 2 / 3, "pessimistic": 7 / 12, "input": 7 / 12}
    )
    # input depends on the order, the other policies do not
    assert ap([1, 1, 1], [1, 1, -1], ties="input") == 1.0
    assert ap([1, 1, 1], [1, 1, -1]) == values["grouped"]
    # optimistic >= grouped does NOT hold in general: a tie of positives after a negative.
    # Per rank the positives sit at ranks 2 and 3: (1/2)(1/2 + 2/3) = 7/12 whatever the policy;
    # grouped enters both at one threshold with precision 2/3: (2/2)(2/3) = 2/3 > 7/12.
    assert ap([2, 1, 1], [-1, 1, 1], ties="optimistic") == pytest.approx(7 / 12)
    assert ap([2, 1, 1], [-1, 1, 1]) == pytest.approx(2 / 3)


@pytest.mark.slow  # hypothesis: 200 examples
@settings(max_examples=examples(200), deadline=None)
@given(one_list(scores=TIED_SCORES, max_size=15))
def test_tie_policies_bound_each_other(data):
    scores, labels = data
    v = {t: ap(scores, labels, ties=t) for t in TIES}
    if np.isnan(v["grouped"]):
        assert all(np.isnan(x) for x in v.values())
        return
    eps = 1e-12
    assert v["pessimistic"] <= v["grouped"] + eps
    assert v["pessimistic"] <= v["input"] + eps <= v["optimistic"] + 2 * eps
    if np.unique(scores[labels != 0]).size == np.count_nonzero(labels):  # no ties: one order
        assert v["grouped"] == pytest.approx(v["optimistic"], rel=1e-15)
        assert v["pessimistic"] == pytest.approx(v["optimistic"], rel=1e-15)


# ----------------------------------------------------------------------------- VOC and COCO

# 10 positives; ranks +,+,+,-,-,-,+ then 6 positives never retrieved.
# R: .1 .2 .3 .3 .3 .3 .4   P: 1 1 1 3/4 3/5 1/2 4/7   envelope: 1 1 1 4/7 4/7 4/7 4/7
VOC_SCORES = [10, 9, 8, 7, 6, 5, 4] + [-INF] * 6
VOC_LABELS = [1, 1, 1, -1, -1, -1, 1] + [1] * 6


def test_voc07_grid_is_numpy_arange():
    # 3/10 is the double 0.29999999999999999 and the 4th threshold is 0.30000000000000004,
    # so the point at R = 0.3 does not reach it: the first point with R >= t is rank 7.
    assert 3 / 10 < VOC07_RECALL_THRESHOLDS[3] == 0.30000000000000004
    # t = 0, .1, .2 -> 1; t = .30000000000000004, .4 -> 4/7; t >= .5 -> 0
    assert ap_voc07(VOC_SCORES, VOC_LABELS) == pytest.approx((3 + 2 * 4 / 7) / 11, rel=1e-15)
    # with an exact 0.3 grid it would be (4 + 4/7) / 11; the devkit agrees with us
    rec, prec = rec_prec(ranked_labels(VOC_SCORES, VOC_LABELS, "input"), 10)
    assert voc_ap(rec, prec, use_07_metric=True) == pytest.approx(29 / 77, rel=1e-15)


def test_voc10_and_coco_hand_worked():
    # VOC10: .1*1 + .1*1 + .1*1 + .1*(4/7) = 0.3 + 0.4/7
    assert ap_voc10(VOC_SCORES, VOC_LABELS) == pytest.approx(0.3 + 0.4 / 7, rel=1e-14)
    # COCO on +,-,+ (P = 2): R .5 .5 1, P 1 1/2 2/3, envelope 1 2/3 2/3.
    # t = 0 .. 0.5 (51 thresholds) -> 1; t = .51 .. 1 (50) -> 2/3: (51 + 50 * 2/3) / 101
    assert ap_coco([3, 2, 1], [1, -1, 1]) == pytest.approx((51 + 100 / 3) / 101, rel=1e-14)
    assert COCO_RECALL_THRESHOLDS[50] == 0.5


@pytest.mark.slow  # hypothesis: 150 examples per tie policy
@pytest.mark.parametrize("ties", PER_RANK)
@settings(max_examples=examples(150), deadline=None)
@given(data=one_list(max_size=15), extra=st.integers(0, 2))
def test_voc_and_coco_match_transcriptions(ties, data, extra):
    scores, labels = data
    npos = int(np.sum(labels == 1)) + extra
    if npos == 0:
        return
    ranked = ranked_labels(scores, labels, ties)
    rec, prec = rec_prec(ranked, npos)
    kw = {"ties": ties, "n_positives": npos}
    assert ap_voc07(scores, labels, **kw) == pytest.approx(voc07_devkit(rec, prec), rel=1e-12)
    assert ap_voc07_numpy(scores, labels, **kw) == pytest.approx(voc_ap(rec, prec, True), rel=1e-12)
    assert ap_voc10(scores, labels, **kw) == pytest.approx(voc_ap(rec, prec, False), rel=1e-12)
    assert ap_coco(scores, labels, **kw) == pytest.approx(coco_ap(ranked, npos), rel=1e-12)
    # and AP is VLFeat's: sum of the precisions at the retrieved positives / P
    assert ap(scores, labels, **kw) == pytest.approx(np.sum(prec[ranked == 1]) / npos, rel=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_long_lists_match_transcriptions(seed):
    # long lists exercise the doubling scan of the envelope (up to 9 passes)
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 400, size=6)
    group = np.repeat(np.arange(6), sizes)
    scores = rng.integers(0, 50, size=group.size).astype(float)  # ties too
    labels = rng.choice([-1, -1, 0, 1], size=group.size)
    for metric, reference in [
        ("ap_voc07", lambda r, p: voc07_devkit(*rec_prec(r, p))),
        ("ap_voc07_numpy", lambda r, p: voc_ap(*rec_prec(r, p), use_07_metric=True)),
        ("ap_voc10", lambda r, p: voc_ap(*rec_prec(r, p), use_07_metric=False)),
        ("ap_coco", coco_ap),
    ]:
        _, values = per_list(metric, group, scores, labels, ties="input")
        for g, value in enumerate(values):
            s, lab = scores[group == g], labels[group == g]
            npos = int(np.sum(lab == 1))
            expected = reference(ranked_labels(s, lab, "input"), npos) if npos else np.nan
            np.testing.assert_allclose(value, expected, rtol=1e-12)


# ----------------------------------------------------------------------------- @k and fpr95


@pytest.mark.parametrize(
    ("ties", "p_at_2", "r_at_2"),
    [
        # ranks: 3:+ | tie at 2 of +,-,- | 1:+ ; P = 3. k = 2 cuts the tie after 1 item.
        # grouped: TP_2 = 1 + (2 - 1) * 1/3 = 4/3 -> P@2 = (4/3)/2 = 2/3, R@2 = (4/3)/3 = 4/9
        ("grouped", 2 / 3, 4 / 9),
        ("optimistic", 1.0, 2 / 3),  # +,+ -> TP_2 = 2
        ("pessimistic", 0.5, 1 / 3),  # +,- -> TP_2 = 1
        ("input", 1.0, 2 / 3),  # input order puts the tied positive first
    ],
)
def test_at_k_cut_tie_group(ties, p_at_2, r_at_2):
    scores, labels = [3, 2, 2, 2, 1], [1, 1, -1, -1, 1]
    assert precision_at_k(scores, labels, 2, ties=ties) == pytest.approx(p_at_2, rel=1e-15)
    assert recall_at_k(scores, labels, 2, ties=ties) == pytest.approx(r_at_2, rel=1e-15)


def test_at_k_beyond_the_list():
    # 2 ranked items (+,-), the ignored one is not ranked; ranks 3..5 are misses: P@5 = 1/5
    assert precision_at_k([2, 1, 0], [1, -1, 0], 5) == 0.2
    assert recall_at_k([2, 1, 0], [1, -1, 0], 5) == 1.0
    # a positive not retrieved stays missed: P = 2, R@5 = 1/2
    assert recall_at_k([2, 1, -INF], [1, -1, 1], 5) == 0.5
    # k cuts nothing at a tie boundary: TP_3 = 1 + (3 - 1) * 1/2 = 2 exactly
    assert precision_at_k([3, 2, 2], [1, 1, -1], 3) == 2 / 3


def test_fpr95_hand_worked():
    # 18 +, 2 -, then + (19/20 = 0.95 >= 0.95 at rank 21, FP = 2), +, 3 -: N = 5 -> 2/5
    labels = [1] * 18 + [-1] * 2 + [1, 1] + [-1] * 3
    scores = list(range(len(labels), 0, -1))
    assert fpr95(scores, labels) == 0.4
    # 95% recall never reached by the retrieved items -> 1.0
    assert fpr95([*scores[:20], -INF, -INF], [*labels[:20], 1, 1]) == 1.0
    # grouped: the threshold s=2 admitting the 2nd positive also admits a negative: FP 1 / N 2
    assert fpr95([3, 2, 2, 1], [1, 1, -1, -1]) == 0.5
    assert fpr95([3, 2, 2, 1], [1, 1, -1, -1], ties="optimistic") == 0.0
    # N == 0 and P == 0
    assert np.isnan(fpr95([2, 1], [1, 1]))
    assert np.isnan(fpr95([2, 1], [-1, -1]))


@pytest.mark.slow  # hypothesis: 150 examples
@settings(max_examples=examples(150), deadline=None)
@given(one_list(labels=(-1, 1), max_size=40))
def test_fpr95_matches_hardnet(data):
    scores, labels = data
    scores = np.arange(labels.size, 0, -1.0)  # distinct scores: HardNet has no tie rule
    if not ((labels == 1).any() and (labels == -1).any()):
        return
    assert fpr95(scores, labels) == hardnet_fpr95((labels == 1).astype(int), scores)


# ----------------------------------------------------------------------------- trapezoids


@pytest.mark.parametrize(
    ("scores", "labels", "kwargs", "expected"),
    [
        # the example, -,+: points (R, P) = (0, 1) lead, (0, 0), (1, 1/2):
        # 0 * (1 + 0)/2 + 1 * (0 + 1/2)/2 = 1/4 (AP would be 1/2)
        ([2, 1], [-1, 1], {}, 0.25),
        # +,-,+: (0, 1), (1/2, 1), (1/2, 1/2), (1, 2/3):
        # 1/2 * (1 + 1)/2 + 0 + 1/2 * (1/2 + 2/3)/2 = 1/2 + 7/24 = 19/24 (AP 5/6)
        ([3, 2, 1], [1, -1, 1], {"ties": "input"}, 19 / 24),
        # same, P = 4: recalls 1/4, 1/4, 1/2: 1/4 * 2/2 + 1/4 * (7/6)/2 = 1/4 + 7/48 = 19/48
        ([3, 2, 1], [1, -1, 1], {"ties": "input", "n_positives": 4}, 19 / 48),
        # the -inf positive counts in P = 2 but the curve stops at (1/2, 1/2): 1/2 * (1 + 1)/2
        ([3, 2, -INF], [1, -1, 1], {}, 0.5),
        # the ignored item is dropped: (0, 1), (1/2, 1), (1, 1) -> 1
        ([3, 2, 1], [1, 0, 1], {}, 1.0),
        # grouped: s=2 gives (0, 0), s=1 admits both positives at once (1, 2/3):
        # 0 + 1 * (0 + 2/3)/2 = 1/3
        ([2, 1, 1], [-1, 1, 1], {}, 1 / 3),
        # per rank -,+,+: (0, 0), (1/2, 1/2), (1, 2/3): 1/2 * (0 + 1/2)/2 + 1/2 * (1/2 + 2/3)/2
        # = 1/8 + 7/24 = 5/12
        ([2, 1, 1], [-1, 1, 1], {"ties": "optimistic"}, 5 / 12),
        # P > 0 and nothing retrieved: only the leading point
        ([-INF, -INF], [1, -1], {}, 0.0),
    ],
)
def test_auc_pr_trapz_hand_worked(scores, labels, kwargs, expected):
    assert auc_pr_trapz(scores, labels, **kwargs) == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize(
    ("scores", "labels", "kwargs", "expected"),
    [
        # 4 (positive, negative) pairs; the tie at s=2 pairs the 2nd positive with the 1st
        # negative: grouped 1/2 for it, (1 + 1 + 1/2 + 1) / 4 = 7/8; the trapezoids: (0, 0),
        # (0, 1/2), (1/2, 1), (1, 1): 1/2 * (1/2 + 1)/2 + 1/2 * (1 + 1)/2 = 3/8 + 1/2 = 7/8
        ([3, 2, 2, 1], [1, 1, -1, -1], {}, 7 / 8),
        ([3, 2, 2, 1], [1, 1, -1, -1], {"ties": "optimistic"}, 1.0),  # the tied pair in order
        ([3, 2, 2, 1], [1, 1, -1, -1], {"ties": "pessimistic"}, 3 / 4),  # out of order
        ([3, 2, 2, 1], [1, 1, -1, -1], {"ties": "input"}, 1.0),  # + before - in the input
        # worst order
        ([2, 1], [-1, 1], {}, 0.0),
        # the positive is not retrieved: below the retrieved negative (0), tied with the other
        # negative at the bottom (1/2): 1/2 / 2 = 1/4; (0, 0), (1/2, 0), closed by (1, 1)
        ([2, -INF, -INF], [-1, 1, -1], {}, 0.25),
        # P = 2 from n_positives: +,- retrieved, the 2nd positive at the bottom, below the
        # negative: (1 + 0) / 2; (0, 1/2), (1, 1/2), (1, 1): 1 * (1/2 + 1/2)/2 = 1/2
        ([2, 1], [1, -1], {"n_positives": 2}, 0.5),
        # the ignored item is left out: +,- -> 1
        ([3, 2, 1], [1, 0, -1], {}, 1.0),
        # nothing retrieved: everything tied at the bottom
        ([-INF, -INF], [1, -1], {}, 0.5),
    ],
)
def test_roc_auc_hand_worked(scores, labels, kwargs, expected):
    assert roc_auc(scores, labels, **kwargs) == pytest.approx(expected, rel=1e-15)


def test_roc_auc_without_negatives_or_positives_is_nan():
    assert np.isnan(roc_auc([2, 1], [1, 1]))  # N = 0
    assert np.isnan(roc_auc([2, 1], [-1, -1]))  # P = 0
    assert np.isnan(roc_auc([2, 1], [1, 0], n_positives=3))  # N = 0 with an override


def _random_lists(seed: int, n_lists: int = 300):
    """Lists with heavy ties, ignored items, -inf and (n_positives) overrides."""
    rng = np.random.default_rng(seed)
    for _ in range(n_lists):
        n = int(rng.integers(1, 30))
        scores = rng.integers(0, 5, size=n) / 3.0
        scores[rng.random(n) < 0.15] = -INF
        labels = rng.choice([-1, -1, 0, 1], size=n)
        extra = int(rng.integers(0, 3)) if rng.random() < 0.3 else None
        npos = None if extra is None else int(np.sum(labels == 1)) + extra
        yield scores, labels, npos


@pytest.mark.parametrize("seed", range(3))
def test_roc_auc_equals_sklearn(seed):
    checked = 0
    for scores, labels, npos in _random_lists(seed):
        p = np.sum(labels == 1) if npos is None else npos
        if p == 0 or not (labels == -1).any():
            assert np.isnan(roc_auc(scores, labels, n_positives=npos))
            continue
        got = roc_auc(scores, labels, n_positives=npos)
        assert got == pytest.approx(sklearn_roc_auc(scores, labels, npos), rel=1e-12, abs=1e-15)
        # grouped ties give a tied pair 1/2: the mean of the two per-rank extremes
        bounds = [roc_auc(scores, labels, n_positives=npos, ties=t) for t in PER_RANK[:2]]
        assert got == pytest.approx(sum(bounds) / 2, rel=1e-14, abs=1e-15)
        checked += 1
    assert checked > 100


@pytest.mark.slow  # hypothesis: 200 examples
@settings(max_examples=examples(200), deadline=None)
@given(data=one_list(min_size=1, max_size=20), extra=st.integers(0, 2))
def test_roc_auc_equals_sklearn_any_scores(data, extra):
    scores, labels = data
    npos = int(np.sum(labels == 1)) + extra
    if npos == 0 or not (labels == -1).any():
        return
    got = roc_auc(scores, labels, n_positives=npos)
    assert got == pytest.approx(sklearn_roc_auc(scores, labels, npos), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("seed", range(3))
def test_trapezoids_match_vlfeat_and_hpatches(seed):
    # both sort stably: ties="input". VLFeat keeps the items labelled 0 (zero-width steps);
    # HPatches has labels 1/0 and numpos. Their max(tp, 1e-10) gives the points before the
    # first positive the precision 1e-10 / FP instead of 0: one trapezoid, of width R <= 1,
    # gains (1e-10 / FP) / 2 <= 5e-11 (give or take the rounding of 0.25 + 5e-11).
    most = 5e-11 * (1 + 1e-6)
    checked = 0
    for scores, labels, npos in _random_lists(seed):
        p = np.sum(labels == 1) if npos is None else npos
        retrieved = (scores > -INF) & (labels != 0)
        if p == 0 or not retrieved.any():
            continue
        got = auc_pr_trapz(scores, labels, n_positives=npos, ties="input")
        assert abs(got - vl_pr_auc(labels, scores, npos)) <= most
        kept = labels != 0
        s, lab01 = scores[kept], (labels[kept] == 1).astype(int)
        assert abs(got - hpatches_pr_ap(s, lab01, npos)) <= most
        if labels[retrieved][np.argsort(-scores[retrieved], kind="stable")][0] == 1:
            # a positive first: no point has TP = 0 < TP + FP, and the codes agree exactly
            assert got == pytest.approx(vl_pr_auc(labels, scores, npos), rel=1e-12)
        if (scores[kept] > -INF).all() and 0 < lab01.sum() < lab01.size:
            # HPatches' balanced verification "auc": everything retrieved
            want = hpatches_roc_auc(s, lab01)
            assert roc_auc(scores, labels, ties="input") == pytest.approx(want, rel=1e-12)
        checked += 1
    assert checked > 100


@pytest.mark.parametrize("seed", range(3))
def test_auc_pr_trapz_grouped_equals_sklearn_auc_of_pr_curve(seed):
    # sklearn's precision_recall_curve ends with (recall 0, precision 1), our leading point,
    # and has one point per distinct score: auc(recall, precision), what its docs call "too
    # optimistic", is auc_pr_trapz under grouped ties when every positive is retrieved.
    checked = 0
    for scores, labels, _ in _random_lists(seed):
        keep = (labels != 0) & (scores > -INF)
        if not (labels[keep] == 1).any() or (labels == 1).sum() > (labels[keep] == 1).sum():
            continue
        precision, recall, _ = precision_recall_curve(labels[keep], scores[keep])
        want = auc(recall, precision)
        assert auc_pr_trapz(scores, labels) == pytest.approx(want, rel=1e-12)
        checked += 1
    assert checked > 50


# ----------------------------------------------------------------------------- edge cases

#: every ranking metric of the core: the names of evalstore.core.point_metrics' functions
METRIC_NAMES = tuple(
    n.removesuffix("_of_points") for n in point_metrics.__all__ if n.endswith("_of_points")
)


@pytest.mark.parametrize("metric", METRIC_NAMES)
@pytest.mark.parametrize(
    ("scores", "labels"),
    [([], []), ([1.0, 2.0], [0, 0]), ([1.0, 2.0, -INF], [-1, -1, -1]), ([-INF], [0])],
    ids=["empty", "all-ignored", "no-positives", "ignored-not-retrieved"],
)
def test_no_positives_give_nan(metric, scores, labels):
    for ties in TIES:
        assert np.isnan(_single(metric)(scores, labels, ties=ties))


@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        ("ap", 0.0),
        ("ap_voc07", 0.0),
        ("ap_voc10", 0.0),
        ("ap_coco", 0.0),
        ("precision_at_k", 0.0),
        ("recall_at_k", 0.0),
        ("fpr95", math.nan),
        ("auc_pr_trapz", 0.0),
        ("roc_auc", math.nan),
    ],
)
def test_empty_list_with_override(metric, expected):
    # P = 2 from n_positives, nothing ranked; fpr95 and roc_auc have N = 0
    np.testing.assert_equal(_single(metric)([], [], n_positives=2), expected)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: ap([1.0, math.nan], [1, -1]), "index 1"),
        (lambda: ap([INF, 1.0], [1, -1]), "index 0"),
        (lambda: ap([1.0, 2.0], [1, 2]), "index 1"),
        (lambda: ap([1.0, 2.0], [1.0, 0.5]), "index 1"),
        (lambda: ap([1.0, 2.0], [True, False]), "labels"),
        (lambda: ap([1.0, 2.0], [1]), "labels"),
        (lambda: ap([1.0], [1], ties="random"), "ties"),
        (lambda: ap([1.0, 2.0], [1, 1], n_positives=1), "n_positives"),
        (lambda: ap([1.0], [1], n_positives=1.5), "n_positives"),
        (lambda: precision_at_k([1.0], [1], 0), "k must"),
        (lambda: precision_at_k([1.0], [1], 1.5), "k must"),
        (lambda: recall_at_k([1.0], [1], True), "k must"),
        (lambda: per_list("auc", [0], [1.0], [1]), "unknown ranking metric"),
        (lambda: per_list("precision_at_k", [0], [1.0], [1]), "k must"),
        (lambda: per_list("ap", [0], [1.0], [1], k=0), "k must"),
        (lambda: per_list("ap", [0.5], [1.0], [1]), "group"),
        (lambda: per_list("ap", [0, 1], [1.0, 2.0], [1, 1], n_positives=[1]), "n_positives"),
        (lambda: per_list("ap", [0, 0], [1.0, 2.0], [1, 1], order=[0]), "order"),
        (lambda: per_list("ap", [3, 7], [1.0, 2.0], [1, 1], n_positives=[1, 0]), "list 7"),
    ],
)
def test_invalid_input(call, message):
    with pytest.raises(InvalidInput, match=message):
        call()


def test_zeros_of_both_signs_tie():
    assert ap([0.0, -0.0], [-1, 1]) == ap([0.0, 0.0], [-1, 1]) == 0.5


# ----------------------------------------------------------------------------- curve, points


def test_pr_curve():
    # grouped: thresholds 3, 2, 1 -> TP 1,2,2 FP 0,1,2
    recall, precision = pr_curve([3, 2, 2, 1], [1, 1, -1, -1])
    np.testing.assert_array_equal(recall, [0.5, 1.0, 1.0])
    np.testing.assert_array_equal(precision, [1.0, 2 / 3, 0.5])
    # per rank, input order: + + - -
    recall, precision = pr_curve([3, 2, 2, 1], [1, 1, -1, -1], ties="input")
    np.testing.assert_array_equal(recall, [0.5, 1.0, 1.0, 1.0])
    np.testing.assert_array_equal(precision, [1.0, 1.0, 2 / 3, 0.5])
    recall, precision = pr_curve([], [])
    assert recall.size == precision.size == 0


def test_ranking_points_layout():
    # lists 7 (rows 0, 2, 4) and -1 (rows 1, 3); codes need not be 0..G-1 nor sorted
    pts = ranking_points([7, -1, 7, -1, 7], [1.0, 5.0, 3.0, -INF, 3.0], [-1, 1, 1, 1, 0])
    np.testing.assert_array_equal(pts.groups, [-1, 7])
    np.testing.assert_array_equal(pts.n_positives, [2, 1])  # the -inf positive counts
    np.testing.assert_array_equal(pts.n_negatives, [0, 1])
    np.testing.assert_array_equal(pts.count, [1, 2])
    np.testing.assert_array_equal(pts.start, [0, 1])
    np.testing.assert_array_equal(pts.list_index, [0, 1, 1])
    np.testing.assert_array_equal(pts.tp, [1, 1, 1])
    np.testing.assert_array_equal(pts.fp, [0, 0, 1])
    np.testing.assert_array_equal(pts.recall, [0.5, 1.0, 1.0])
    np.testing.assert_array_equal(pts.precision, [1.0, 1.0, 0.5])


def test_mean_over_lists():
    assert mean_over_lists([0.5, np.nan, 1.0]) == (0.75, 2, 1)
    mean, used, skipped = mean_over_lists([np.nan])
    assert np.isnan(mean) and (used, skipped) == (0, 1)
    assert np.isnan(mean_over_lists([])[0])


# ----------------------------------------------------------------------------- per_list == loop


def loop_per_list(metric, group, scores, labels, override, ties, k, order):
    """The single-list function on each list, rows in input order (``order`` if given)."""
    rows = np.arange(group.size) if order is None else np.argsort(order, kind="stable")
    uniq = np.unique(group)
    out = []
    for i, g in enumerate(uniq):
        sel = rows[group[rows] == g]
        kw = {"ties": ties, "n_positives": None if override is None else int(override[i])}
        if k is not None:
            kw["k"] = k
        out.append(getattr(ranking, metric)(scores[sel], labels[sel], **kw))
    return uniq, np.array(out)


@pytest.mark.slow  # hypothesis: 40 examples x 28 metric/tie combinations
@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("metric", METRIC_NAMES)
@settings(max_examples=examples(40), deadline=None)
@given(data=many_lists(), k=st.integers(1, 9))
def test_per_list_equals_loop(metric, ties, data, k):
    group, scores, labels, override, order = data
    k_or_none = k if metric in ("precision_at_k", "recall_at_k") else None
    groups, values = per_list(
        metric, group, scores, labels, n_positives=override, ties=ties, k=k_or_none, order=order
    )
    expected_groups, expected = loop_per_list(
        metric, group, scores, labels, override, ties, k_or_none, order
    )
    np.testing.assert_array_equal(groups, expected_groups)
    np.testing.assert_array_equal(values, expected)


@pytest.mark.parametrize("ties", TIES)
def test_per_list_scores_one_ulp_apart(ties):
    # scores equal in their top bits: with 3 lists the sort word keeps 62 bits of the score
    # key, so 1.0 and its next doubles collide there and go through the exact re-sort.
    up = np.nextafter
    s = np.array([1.0, up(1.0, 2), up(up(1.0, 2), 2), 1.0, up(1.0, 2), 7.0, 7.0])
    group = np.array([0, 0, 0, 1, 1, 2, 2])
    labels = np.array([-1, -1, 1, 1, -1, -1, 1])
    for metric in METRIC_NAMES:
        k = 2 if metric in ("precision_at_k", "recall_at_k") else None
        _, values = per_list(metric, group, s, labels, ties=ties, k=k)
        _, expected = loop_per_list(metric, group, s, labels, None, ties, k, None)
        np.testing.assert_array_equal(values, expected)
    # list 0 ranks + (highest), -, -: AP 1
    assert per_list("ap", group, s, labels, ties=ties)[1][0] == 1.0


def test_per_list_many_shuffled_groups():
    # > 65536 lists in shuffled row order: the list pre-sort cannot use 16-bit codes
    rng = np.random.default_rng(0)
    n_groups = 70_000
    group = rng.permutation(np.repeat(np.arange(n_groups) * 3, 2))
    scores = rng.integers(0, 3, size=group.size).astype(float)
    labels = rng.choice([-1, 1], size=group.size)
    groups, values = per_list("ap", group, scores, labels)
    np.testing.assert_array_equal(groups, np.arange(n_groups) * 3)
    for i in rng.choice(n_groups, size=50, replace=False):
        sel = group == groups[i]
        np.testing.assert_array_equal(values[i], ap(scores[sel], labels[sel]))


def test_per_list_order_is_input_order():
    # order reverses the rows: the single-list function sees them reversed
    group = np.array([0, 0, 0, 1, 1])
    scores = np.array([1.0, 1.0, 1.0, 2.0, 2.0])
    labels = np.array([-1, 1, 1, 1, -1])
    order = np.array([4, 3, 2, 1, 0])
    _, values = per_list("ap", group, scores, labels, ties="input", order=order)
    # list 0 reversed: +,+,- -> 1; list 1 reversed: -,+ -> (1/1)(1/2) = 1/2
    np.testing.assert_array_equal(values, [1.0, 0.5])
    _, values = per_list("ap", group, scores, labels, ties="input")
    # array order: -,+,+ -> (1/2)(1/2 + 2/3) = 7/12; +,- -> 1
    np.testing.assert_allclose(values, [7 / 12, 1.0], rtol=1e-15)


@pytest.mark.parametrize(
    "group",
    [
        np.array([100, -100, 100, -100], dtype=np.int8),  # 100 - (-100) overflows int8
        np.array([2**63 + 5, 2**63 + 1, 2**63 + 5, 2**63 + 1], dtype=np.uint64),
        np.array([10**15, -(10**15), 10**15, -(10**15)]),  # sparse codes: the np.unique path
    ],
)
def test_group_codes_of_any_integer_dtype(group):
    groups, values = per_list("ap", group, [1.0, 2.0, 3.0, 4.0], [1, -1, -1, 1])
    np.testing.assert_array_equal(groups, np.sort(np.unique(group)))
    # low code: rows 1, 3 -> scores 2 (-), 4 (+): AP 1; high code: 1 (+), 3 (-): AP 1/2
    np.testing.assert_array_equal(values, [1.0, 0.5])
