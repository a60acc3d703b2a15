"""Protocols ``hpatches`` (the MATLAB benchmark: VLFeat ``vl_pr`` ``info.ap``, ties in input
order) and ``hpatches-python`` (``python/utils/metrics.py``: ``np.trapz`` of the PR curve and
of the ROC curve) against transcriptions of their code (reference_hpatches.py), through a
real store and the metric SQL."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.conformance import reference_hpatches as ref
from tests.conformance.harness import (
    SIZES,
    Ranked,
    assert_lists,
    close,
    ingest,
    mixed_lists,
    one,
    open_store,
    random_lists,
    values,
)

# ----------------------------------------------------------------------- hand-worked cases


def test_vl_pr_by_hand() -> None:
    # labels [-1, +1], scores [2, 1]: tp = [0 0 1], fp = [0 1 1], p = 1
    #   recall = [0 0 1], precision = [1, 1e-10 / 1, 1/2]
    #   info.ap: sel = find(diff(recall)) + 1 = the third point: 0.5 / 1 = 0.5
    #   info.auc: 0.5 * ((1 + 1e-10) * 0 + (1e-10 + 0.5) * 1) = 0.25 + 5e-11
    recall, precision, info = ref.vl_pr([-1, 1], [2, 1])
    assert recall.tolist() == [0, 0, 1] and precision.tolist() == [1, 1e-10, 0.5]
    assert info["ap"] == 0.5 and info["auc"] == 0.5 * (1e-10 + 0.5)
    # the Python benchmark's pr() is np.trapz of the same curve: 0.25 + 5e-11
    assert ref.pr(np.array([2.0, 1.0]), np.array([0, 1]))[2] == pytest.approx(0.25 + 5e-11)


def test_hand_worked_ties_in_input_order(tmp_path: Path) -> None:
    # scores [1, 1, 1], labels [+1, -1, +1]: one tie. vl_pr sorts stably, so the input order
    # stays: precision at the two positives 1/1 and 2/3 -> ap = (1 + 2/3) / 2 = 5/6.
    # (Ties grouped, evalstore's default, would give one point (R 1, P 2/3): ap 2/3.)
    lst = one([1, 1, 1], [1, -1, 1])
    assert ref.vl_pr(lst.labels, lst.scores)[2]["ap"] == pytest.approx(5 / 6, rel=1e-15)
    with open_store(tmp_path) as store:
        ingest(store, "r", "retrieval", [lst])
        got = values(store, "r", "hpatches").per_list("ap")
    assert got["0"] == pytest.approx(5 / 6, rel=1e-15)


def test_hand_worked_auc_pr_trapz_is_not_ap(tmp_path: Path) -> None:
    # labels [-1, +1] scores [2, 1]: hpatches gives ap 0.5 (above); hpatches-python gives the
    # trapezoids (0, 1) -> (0, 0) -> (1, 1/2): 0.25 (0.25 + 5e-11 with VLFeat's 1e-10 / FP)
    lst = one([2, 1], [-1, 1])
    with open_store(tmp_path) as store:
        ingest(store, "r", "verification", [lst], one_list=True)
        ap = values(store, "r", "hpatches").mean("ap")
        py = values(store, "r", "hpatches-python")
    assert ap == 0.5
    assert py.mean("auc_pr_trapz") == 0.25
    assert py.mean("roc_auc_trapz") == 0.0  # the negative ranks first: no pair in order


# ------------------------------------------------------------------- MATLAB: vl_pr info.ap


def _ap_reference(lst: Ranked) -> float:
    return ref.vl_pr(lst.labels, lst.scores, num_positives=lst.n_positives)[2]["ap"]


AP_CASES = [
    (1, {"distinct": 2}),  # two scores: ties between positives and negatives everywhere
    (2, {"distinct": 3, "p_ignored": 0.2}),
    (3, {"distinct": 4, "p_unretrieved": 0.3}),
    (4, {"distinct": 3, "p_ignored": 0.2, "p_unretrieved": 0.2, "max_size": 3}),
    (5, {"distinct": None, "p_ignored": 0.1, "p_unretrieved": 0.1}),  # no ties
    (6, {"distinct": 1, "p_ignored": 0.1, "max_size": 8}),  # one tie: input order alone
]


def test_vl_pr_ap_on_generated_lists(tmp_path: Path) -> None:
    lists = mixed_lists(AP_CASES, 50)
    with open_store(tmp_path) as store:
        ingest(store, "r", "retrieval", lists)
        got = values(store, "r", "hpatches")
    expected = {lst.group: _ap_reference(lst) for lst in lists}
    assert_lists(got.per_list("ap"), expected, "hpatches ap", lists)
    assert close(got.mean("map"), float(np.mean(list(expected.values()))))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(100, 110))
def test_vl_pr_ap_on_generated_lists_many(tmp_path: Path, seed: int) -> None:
    lists = mixed_lists([(seed * 10 + i, kw) for i, (_, kw) in enumerate(AP_CASES)], 100)
    with open_store(tmp_path) as store:
        ingest(store, "r", "retrieval", lists)
        got = values(store, "r", "hpatches").per_list("ap")
    assert_lists(got, {lst.group: _ap_reference(lst) for lst in lists}, "hpatches ap", lists)


def test_vl_pr_ap_sizes_1_to_2000(tmp_path: Path) -> None:
    lists = random_lists(6, len(SIZES), sizes=SIZES, distinct=5, p_ignored=0.1, p_unretrieved=0.1)
    with open_store(tmp_path) as store:
        ingest(store, "r", "retrieval", lists)
        got = values(store, "r", "hpatches").per_list("ap")
    assert_lists(got, {lst.group: _ap_reference(lst) for lst in lists}, "hpatches ap", lists)


def test_matching_eval_m(tmp_path: Path) -> None:
    """eval.m's vl_pr(isValid*2 - 1, -dist(1,:), 'numPositives', numel(isValid)): labels +-1,
    infinite distances (NaN -> inf) never retrieved, P = the number of query patches."""
    rng = np.random.default_rng(7)
    lists, expected = [], {}
    for g, n in enumerate((1, 2, 5, 40, 300)):
        is_valid = rng.random(n) < 0.6
        dist = np.round(rng.random(n) * 4) / 4  # few distinct distances: ties
        dist[rng.random(n) < 0.15] = np.inf
        dist[rng.random(n) < 0.05] = np.nan
        expected[f"{g}"] = ref.matching_ap(is_valid, dist)
        score = -np.where(np.isnan(dist), np.inf, dist)
        lists.append(Ranked(f"{g}", list(range(n)), score, is_valid * 2 - 1, n_positives=n))
    with open_store(tmp_path) as store:
        ingest(store, "r", "matching", lists)
        got = values(store, "r", "hpatches")
    assert_lists(got.per_list("ap"), expected, "hpatches matching ap", lists)
    assert close(got.mean("map"), float(np.mean(list(expected.values()))))


def test_retrieval_eval_m(tmp_path: Path) -> None:
    """retrieval/eval.m's in-place AP: 5 positives first, then the negatives (0 = same
    sequence as the query), ties kept in that order by the stable sort."""
    rng = np.random.default_rng(8)
    lists, expected = [], {}
    for g in range(40):
        n_neg = int(rng.integers(0, 60))
        pos = np.round(rng.random(5) * 8) / 8
        neg = np.round(rng.random(n_neg) * 8) / 8
        neg_labels = np.where(rng.random(n_neg) < 0.2, 0, -1)
        expected[f"{g}"] = ref.retrieval_ap(pos, neg, neg_labels)[0]
        lists.append(
            Ranked(
                f"{g}",
                list(range(5 + n_neg)),
                -np.concatenate([pos, neg]),
                np.concatenate([np.ones(5, dtype=int), neg_labels]),
            )
        )
    with open_store(tmp_path) as store:
        ingest(store, "r", "retrieval", lists)
        got = values(store, "r", "hpatches")
    assert_lists(got.per_list("ap"), expected, "hpatches retrieval ap", lists)


def test_verification_eval_m(tmp_path: Path) -> None:
    """verification/eval.m: vl_pr([ones, -ones], -[pos_dists, neg_dists]) on one list."""
    rng = np.random.default_rng(9)
    pos = np.round(rng.random(500) * 10) / 10
    neg = np.round(rng.random(700) * 10 + 2) / 10
    lst = Ranked(
        "",
        list(range(1200)),
        -np.concatenate([pos, neg]),
        np.concatenate([np.ones(500, dtype=int), -np.ones(700, dtype=int)]),
    )
    with open_store(tmp_path) as store:
        ingest(store, "r", "verification", [lst], one_list=True)
        got = values(store, "r", "hpatches").mean("ap")
    assert close(got, ref.verification_ap(pos, neg))


def test_lists_without_positives(tmp_path: Path) -> None:
    """vl_pr's info.ap is sum([]) / 0 = NaN without positives; evalstore gives no value and
    leaves the list out of the mean (n_skipped). (eval.m's `if isnan(ap), ap = 0` only fires
    for an image pair without query patches, numPositives = 0, which evalstore cannot hold.)"""
    lists = [one([2, 1], [-1, -1], "a"), one([3, 1], [-1, 1], "b"), one([1], [0], "c")]
    assert np.isnan(_ap_reference(lists[0])) and np.isnan(_ap_reference(lists[2]))
    with open_store(tmp_path) as store:
        ingest(store, "r", "retrieval", lists)
        got = values(store, "r", "hpatches")
    assert got.per_list("ap") == {"a": None, "b": 0.5, "c": None}
    assert got.mean("map") == 0.5 and got.counts[("map", None)] == (1, 2)


def test_nothing_retrieved(tmp_path: Path) -> None:
    """vl_tpfp: max(find(scores > -inf)) is empty, perm(1:[]) too: tp = fp = [0], recall
    [0], no recalled positive: info.ap = 0 / p = 0, as evalstore's ap. (The Python tpfp
    raises there: np.max of an empty np.where.)"""
    lst = one([-np.inf, -np.inf], [1, -1], n_positives=3)
    assert _ap_reference(lst) == 0.0
    with pytest.raises(ValueError):
        ref.tpfp(lst.scores, (lst.labels == 1).astype(int))
    with open_store(tmp_path) as store:
        ingest(store, "r", "matching", [lst])
        got = values(store, "r", "hpatches")
    assert got.per_list("ap") == {"0": 0.0}


# ----------------------------------------------------------- Python: pr() and roc() np.trapz


def _py_inputs(lst: Ranked) -> tuple[np.ndarray, np.ndarray]:
    """The Python benchmark's 0/1 labels; it has no ignored label, so the lists here have
    none (label 0 is a negative there)."""
    assert not (lst.labels == 0).any()
    return lst.scores, (lst.labels == 1).astype(int)


PY_CASES = [
    (11, {"distinct": 2}),
    (12, {"distinct": 3}),
    (13, {"distinct": 4, "max_size": 4}),
    (14, {"distinct": None}),
    (15, {"distinct": 1, "max_size": 6}),
]


def test_pr_trapz_on_generated_lists(tmp_path: Path) -> None:
    """evalstore's auc_pr_trapz is pr()'s np.trapz(precision, recall) with the documented
    precision TP / (TP + FP) (0, not 1e-10 / FP, before the first positive): equal to 1e-12
    with that substitution, and within 5e-11 of pr() as written."""
    lists = mixed_lists(PY_CASES, 50)
    with open_store(tmp_path) as store:
        ingest(store, "r", "matching", lists, labels="01")  # the benchmark's 0/1 labels
        got = values(store, "r", "hpatches-python").per_list("auc_pr_trapz")
    exact = {lst.group: ref.pr_without_small(*_py_inputs(lst)) for lst in lists}
    assert_lists(got, exact, "hpatches-python auc_pr_trapz", lists)
    for lst in lists:
        written = ref.pr(*_py_inputs(lst))[2]
        assert abs(written - got[lst.group]) <= 5e-11 + 1e-15


def test_pr_trapz_with_numpos_and_unretrieved(tmp_path: Path) -> None:
    """pr(-m_d, m_l, numpos=m_l.shape[0]) (tasks.py's matching): positives beyond the labels
    are appended at -inf; items at -inf are never retrieved, so the curve stops early."""
    lists = random_lists(15, 60, distinct=3, p_unretrieved=0.3, max_size=12)
    for lst in lists:
        if not (lst.scores > -np.inf).any():
            lst.scores[0] = 0.0  # pr() raises on a list with nothing retrieved (np.max of [])
        lst.n_positives = len(lst.items)
    with open_store(tmp_path) as store:
        ingest(store, "r", "matching", lists)
        got = values(store, "r", "hpatches-python").per_list("auc_pr_trapz")
    exact = {
        lst.group: ref.pr_without_small(*_py_inputs(lst), numpos=lst.n_positives) for lst in lists
    }
    assert_lists(got, exact, "hpatches-python auc_pr_trapz numpos", lists)


def test_roc_trapz_when_everything_is_retrieved(tmp_path: Path) -> None:
    """roc()'s np.trapz(tpr, fpr) equals evalstore's roc_auc when every item is retrieved (the
    curve then ends at (1, 1) by itself), ties in input order."""
    lists = [
        lst
        for lst in mixed_lists([(s, {**kw, "p_positive": 0.5}) for s, kw in PY_CASES], 50)
        if (lst.labels == -1).any()  # roc_auc has no value without negatives
    ]
    with open_store(tmp_path) as store:
        ingest(store, "r", "verification", lists)  # one list per split
        got = values(store, "r", "hpatches-python").per_list("roc_auc_trapz")
    expected = {lst.group: ref.roc(*_py_inputs(lst))[2] for lst in lists}
    assert_lists(got, expected, "hpatches-python roc_auc_trapz", lists)


def test_roc_trapz_with_an_unretrieved_negative(tmp_path: Path) -> None:
    # tpfp: sorted scores [2, 1, -inf], stop = 1: labels [1, 0] -> tp = [0 1 1], fp = [0 0 1];
    # p = 1, n = 2: tpr = [0 1 1], fpr = [0 0 0.5] -> trapz = 0.5 * 1 = 0.5.
    # evalstore's roc_auc_trapz: the same points, no closing segment -> 0.5 (roc_auc, closed
    # by (1, 1) as scikit-learn's, would add 0.5 * 1 -> 1.0)
    lst = one([2, 1, -np.inf], [1, -1, -1])
    assert ref.roc(*_py_inputs(lst))[2] == 0.5
    with open_store(tmp_path) as store:
        ingest(store, "r", "verification", [lst], one_list=True)
        got = values(store, "r", "hpatches-python").mean("roc_auc_trapz")
    assert got == 0.5


def test_roc_trapz_with_unretrieved_items(tmp_path: Path) -> None:
    """Where some items are not retrieved, roc() ends at the last retrieved point, and so does
    evalstore's roc_auc_trapz: equal on generated lists (roc_auc would add the closing
    segment (1 - FP_M / N) * (TP_M / P + 1) / 2, nonzero on most of them)."""
    lists = [
        lst
        for lst in random_lists(16, 80, distinct=3, p_unretrieved=0.3, p_positive=0.5)
        if (lst.labels == -1).any() and (lst.scores > -np.inf).any()
    ]
    with open_store(tmp_path) as store:
        ingest(store, "r", "verification", lists)
        got = values(store, "r", "hpatches-python").per_list("roc_auc_trapz")
    differing = 0
    for lst in lists:
        fpr, tpr, area = ref.roc(*_py_inputs(lst))
        assert got[lst.group] == pytest.approx(area, rel=1e-12, abs=1e-15)
        differing += (1 - fpr[-1]) * (tpr[-1] + 1) / 2 > 0
    assert differing > 10


def test_no_positives_python_gives_zero(tmp_path: Path) -> None:
    """pr() and roc() without positives: recall = tp / max(0, 1e-10) = 0 everywhere, so both
    areas are 0.0 (a number, averaged by the benchmark); evalstore gives no value (NULL, left
    out of the mean). Documented, not a number to compare: HPatches' lists always have
    positives (matching passes numpos = the number of queries)."""
    lst = one([2, 1], [-1, -1])
    assert ref.pr(*_py_inputs(lst))[2] == 0.0 and ref.roc(*_py_inputs(lst))[2] == 0.0
    with open_store(tmp_path) as store:
        ingest(store, "r", "verification", [lst], one_list=True)
        got = values(store, "r", "hpatches-python")
    assert got.mean("auc_pr_trapz") is None and got.mean("roc_auc_trapz") is None
