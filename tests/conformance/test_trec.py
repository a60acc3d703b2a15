"""Protocols ``trec`` and ``trec-c`` against trec_eval itself (``pytrec_eval``): map, P_10 and
recall_10 per query, and the means trec_eval prints (without -c over the queries of the run,
with -c over every query of the judgements, 0 for the missing ones: reference_trec.py).

Labels here are +1 (relevance 1) and -1 (judged, relevance 0); evalstore's label 0
("ignored") is an unjudged document that only trec_eval -J removes from the ranking
(test_label_zero_is_trec_eval_minus_j)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.conformance import reference_trec as ref
from tests.conformance.harness import (
    SIZES,
    Ranked,
    Values,
    assert_lists,
    close,
    ingest,
    mixed_lists,
    open_store,
    random_lists,
    values,
)


def _check(
    tmp_path: Path,
    lists: list[Ranked],
    *,
    judged_docs_only: bool = False,
    name: str = "trec",
    ks: tuple[int, ...] = (10,),
) -> dict[str, ref.TrecResult]:
    """Ingest the lists once; for each cut-off k, evaluate trec and trec-c and require every
    per-query value and every mean to equal trec_eval's (without and with -c). Returns
    trec_eval's results at the last k."""
    qrels = ref.qrels_of(lists, unjudged_zero=judged_docs_only)
    run = ref.run_of(lists)
    results = {}
    with open_store(tmp_path, name) as store:
        ingest(store, "r", "retrieval", lists)
        for k in ks:
            for protocol, complete in (("trec", False), ("trec-c", True)):
                got = values(store, "r", protocol, k=None if k == 10 else k)
                trec = ref.trec_eval(
                    qrels, run, complete=complete, judged_docs_only=judged_docs_only, k=k
                )
                results[protocol] = trec
                _compare(got, trec, qrels, lists, protocol, k)
    return results


def _compare(
    got: Values,
    trec: ref.TrecResult,
    qrels: dict[str, dict[str, int]],
    lists: list[Ranked],
    protocol: str,
    k: int,
) -> None:
    metrics = {"ap": "map", "precision_at_k": f"P_{k}", "recall_at_k": f"recall_{k}"}
    for metric, measure in metrics.items():
        expected = {q: v[measure] for q, v in trec.per_query.items()}
        if protocol == "trec-c":  # the queries of the judgements that the run lacks count 0
            expected.update({q: 0.0 for q in qrels if q not in trec.per_query})
        assert_lists(got.per_list(metric), expected, f"{protocol} {metric} k={k}", lists)
        mean_label = "map" if metric == "ap" else metric
        mean = got.mean(mean_label)
        assert close(mean, trec.means[measure]), (protocol, metric, k, mean, trec.means[measure])
        assert got.counts[(mean_label, None)][0] == trec.num_q


def _docs(*names: str) -> list[str]:
    return list(names)


# ------------------------------------------------------------------------ hand-worked cases


def test_docid_ties_by_hand(tmp_path: Path) -> None:
    # q1: d1 (relevant), d10, d9 all score 1. trec_eval's comp_sim_docno: strcmp(p2, p1), the
    # greater docno first: "d9" > "d10" > "d1" (byte '9' > '1'; "d10" > "d1", longer). d1 ranks
    # third: AP = 1/3, P_10 = 1/10, recall_10 = 1.
    # q2: "7" (relevant) and "10" score 2: "7" > "10" as text, so 7 ranks first: AP = 1.
    # q3: "10" (relevant) and "7": "7" still first (not the numeric order): AP = 1/2.
    # q4, q5: the same with integer item ids 10 and 7 in evalstore (trec_eval has only text
    # docnos): compared as text too, 7 first whatever the input order: AP 1/2 and 1.
    lists = [
        Ranked("q1", _docs("d1", "d10", "d9"), [1.0, 1.0, 1.0], [1, -1, -1]),
        Ranked("q2", _docs("7", "10"), [2.0, 2.0], [1, -1]),
        Ranked("q3", _docs("10", "7"), [2.0, 2.0], [1, -1]),
    ]
    results = _check(tmp_path, lists)
    aps = {q: v["map"] for q, v in results["trec"].per_query.items()}
    assert aps == pytest.approx({"q1": 1 / 3, "q2": 1.0, "q3": 0.5}, rel=1e-15)
    numeric = [
        Ranked("q4", [10, 7], [1.0, 1.0], [1, -1]),
        Ranked("q5", [7, 10], [1.0, 1.0], [1, -1]),
    ]
    results = _check(tmp_path, numeric, name="numeric")
    assert {q: v["map"] for q, v in results["trec"].per_query.items()} == {"q4": 0.5, "q5": 1.0}
    # byte order, as strcmp (unsigned bytes): "Z" (0x5a) < "a" (0x61) < "z" < "\u00e9" (0xc3
    # 0xa9 in UTF-8): the relevant "Z" ranks last of four: AP 1/4
    text = [Ranked("q6", ["Z", "a", "z", "\u00e9"], [1.0] * 4, [1, -1, -1, -1])]
    results = _check(tmp_path, text, name="text")
    assert results["trec"].per_query["q6"]["map"] == 0.25


def test_query_with_nothing_retrieved_by_hand(tmp_path: Path) -> None:
    # q1 retrieves its relevant document first: AP 1; q2 retrieves nothing (every score
    # -inf). trec_eval: q2 is not in the run, so map = 1 over 1 query; with -c, q2 counts 0:
    # map = (1 + 0) / 2 = 0.5, P_10 = (0.1 + 0) / 2 = 0.05
    lists = [
        Ranked("q1", _docs("a", "b"), [2.0, 1.0], [1, -1]),
        Ranked("q2", _docs("c", "d"), [-np.inf, -np.inf], [1, -1]),
    ]
    results = _check(tmp_path, lists)
    assert results["trec"].means["map"] == 1.0 and results["trec"].num_q == 1
    assert results["trec-c"].means["map"] == 0.5 and results["trec-c"].num_q == 2
    assert results["trec-c"].means["P_10"] == pytest.approx(0.05, rel=1e-15)


# -------------------------------------------------------------------------- generated cases


TREC_CASES = [
    (1, {"distinct": 2}),
    (2, {"distinct": 3, "p_unretrieved": 0.2}),
    (3, {"distinct": 4, "p_unretrieved": 0.5, "max_size": 5}),
    (4, {"distinct": None, "p_unretrieved": 0.1, "max_size": 40}),
    (5, {"distinct": 1, "max_size": 25}),  # every score equal: docid order alone
]


def _generated(cases: list[tuple[int, dict]], n_lists: int) -> list[Ranked]:
    lists = mixed_lists([(s, {**kw, "item_ids": "text"}) for s, kw in cases], n_lists)
    rng = np.random.default_rng(len(lists))
    for lst in lists[::5]:  # some queries retrieve nothing
        lst.scores[:] = -np.inf
    for lst in lists[1::5]:  # numeric-looking and shuffled document ids: "10" < "4" < "7"
        lst.items = [str(i) for i in rng.permutation(len(lst.items)) * 3 + 1]
    return lists


def test_generated_runs(tmp_path: Path) -> None:
    _check(tmp_path, _generated(TREC_CASES, 40))


def test_other_cut_offs(tmp_path: Path) -> None:
    """--k K: trec_eval's P.K and recall.K (ranks past the end of a list are misses)."""
    _check(tmp_path, _generated(TREC_CASES[:3], 15), ks=(1, 5, 30))


def test_sizes_1_to_2000(tmp_path: Path) -> None:
    lists = random_lists(6, len(SIZES), sizes=SIZES, distinct=8, p_unretrieved=0.1, item_ids="text")
    _check(tmp_path, lists)


def test_label_zero_is_trec_eval_minus_j(tmp_path: Path) -> None:
    """evalstore's ignored items (label 0) are removed before ranking: trec_eval -J
    (judged_docs_only_flag) with those documents left out of the judgements."""
    lists = random_lists(7, 40, distinct=3, p_ignored=0.3, p_unretrieved=0.1, item_ids="text")
    _check(tmp_path, lists, judged_docs_only=True)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(30, 40))
def test_generated_runs_many(tmp_path: Path, seed: int) -> None:
    _check(tmp_path, _generated([(seed * 10 + i, kw) for i, (_, kw) in enumerate(TREC_CASES)], 60))


# ---------------------------------------------------------------------------- disagreements


def test_query_without_relevant_documents(tmp_path: Path) -> None:
    lists = [
        Ranked("q1", _docs("a", "b"), [2.0, 1.0], [1, -1]),
        Ranked("q2", _docs("c"), [1.0], [-1]),
    ]
    assert ref.trec_eval(ref.qrels_of(lists), ref.run_of(lists), complete=False).means["map"] == 0.5
    _check(tmp_path, lists)
