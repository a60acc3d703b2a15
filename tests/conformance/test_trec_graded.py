"""The graded and first-hit metrics against trec_eval itself (``pytrec_eval``, trec_eval's C
code): ``ndcg``, ``ndcg_cut_k``, ``recip_rank``, ``Rprec`` and ``success_k`` per query, on runs
with graded judgements (grades 0-3), unjudged documents, judged documents the run does not
retrieve, and ties broken as trec_eval breaks them (``ties="docid"``).

A run becomes evalstore rows as the TREC reader will make them: every retrieved document with
its score and its grade (0 when unjudged), and every judged document the run lacks as not
retrieved; the label is +1 where the grade is positive (trec_eval's relevance level 1).

The definitions transcribed (usnistgov/trec_eval @ 0e041ae2351fac4ab44c7cab9ff9a8fbcff1ac7b):
``m_ndcg.c`` ("Note: i+2 since doc i has rank i+1": ``results_dcg += results_gain /
log2((double) (i+2))``, the ideal over every judged document by decreasing gain),
``m_ndcg_cut.c`` (both cut at k), ``m_recip_rank.c``, ``m_Rprec.c``, ``m_success.c``; the gain
of a document is its relevance level (``gain_init.c`` without a gain map)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from evalstore import Store
from evalstore.analysis.evaluate import evaluate

#: evalstore metric (its k) -> trec_eval measure, as pytrec_eval names it
MEASURES = {
    ("ndcg", None): "ndcg",
    ("ndcg_at_k", 5): "ndcg_cut_5",
    ("ndcg_at_k", 10): "ndcg_cut_10",
    ("recip_rank", None): "recip_rank",
    ("r_precision", None): "Rprec",
    ("hit_at_k", 1): "success_1",
    ("hit_at_k", 5): "success_5",
    ("hit_at_k", 10): "success_10",
}
REQUEST = {"ndcg", "ndcg_cut.5,10", "recip_rank", "Rprec", "success.1,5,10"}


def _graded_run(seed: int, n_queries: int, distinct: int | None) -> tuple[dict, dict]:
    """(qrels, run): each query judges some of its documents (grades 0-3, at least one
    positive), retrieves most of them and some unjudged ones; scores with few distinct values
    give ties."""
    rng = np.random.default_rng(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(n_queries):
        docs = [f"d{i}" for i in rng.permutation(int(rng.integers(2, 40)))]
        judged = {
            d: int(g)
            for d, g in zip(docs, rng.integers(0, 4, len(docs)), strict=True)
            if rng.random() < 0.7
        }
        if not any(judged.values()):
            judged[docs[0]] = int(rng.integers(1, 4))
        scores = (
            rng.normal(size=len(docs))
            if distinct is None
            else rng.integers(0, distinct, len(docs)).astype(float)
        )
        retrieved = {d: float(s) for d, s in zip(docs, scores, strict=True) if rng.random() < 0.8}
        qrels[f"q{q}"] = judged
        if retrieved:
            run[f"q{q}"] = retrieved
    return qrels, run


def _rows(qrels: dict, run: dict) -> dict[str, list]:
    rows: dict[str, list] = {"group_id": [], "item_id": [], "score": [], "gain": []}
    for q, judged in qrels.items():
        retrieved = run.get(q, {})
        for d in sorted(set(judged) | set(retrieved)):
            rows["group_id"].append(q)
            rows["item_id"].append(d)
            rows["score"].append(retrieved.get(d, -np.inf))
            rows["gain"].append(float(judged.get(d, 0)))
    return rows


def _evalstore(tmp_path: Path, qrels: dict, run: dict) -> dict[tuple[str, int | None], dict]:
    got: dict[tuple[str, int | None], dict] = {}
    with Store(tmp_path / "trec.duckdb") as store:
        store.ingest(_rows(qrels, run), task="retrieval", run="trec/r", git_commit=None)
        for metric, k in MEASURES:
            frame = evaluate(store, ["trec/r"], metrics=[metric], ties="docid", k=k, by=["list"])
            for row in frame.iter_rows(named=True):
                if row["slice"] and json.loads(row["params"]).get("k") == k:
                    got.setdefault((metric, k), {})[row["slice"].split("=", 1)[1]] = row["value"]
    return got


@pytest.mark.parametrize("distinct", [2, 5, None])
def test_graded_metrics_equal_trec_eval(tmp_path: Path, distinct: int | None) -> None:
    qrels, run = _graded_run(distinct or 7, 40, distinct)
    trec = pytrec_eval.RelevanceEvaluator(qrels, REQUEST).evaluate(run)
    got = _evalstore(tmp_path, qrels, run)
    for (metric, k), measure in MEASURES.items():
        for q, values in trec.items():  # the queries the run has (trec_eval evaluates those)
            assert got[(metric, k)][q] == pytest.approx(values[measure], rel=1e-12, abs=0), (
                metric,
                k,
                q,
            )


def test_a_hand_worked_query(tmp_path: Path) -> None:
    # retrieved d1 (grade 0) 0.9, d2 (grade 2) 0.8, d3 (unjudged) 0.8, d4 (grade 1) 0.1;
    # judged but not retrieved: d5 (grade 3). Ties: d3 before d2 ("d3" > "d2").
    # DCG = 2 / log2(4) + 1 / log2(5); ideal 3, 2, 1: 3 + 2 / log2(3) + 1 / 2.
    qrels = {"q": {"d1": 0, "d2": 2, "d4": 1, "d5": 3}}
    run = {"q": {"d1": 0.9, "d2": 0.8, "d3": 0.8, "d4": 0.1}}
    got = _evalstore(tmp_path, qrels, run)
    dcg = 2 / np.log2(4) + 1 / np.log2(5)
    ideal = 3 + 2 / np.log2(3) + 1 / 2
    assert got[("ndcg", None)]["q"] == pytest.approx(dcg / ideal, rel=1e-15)
    assert got[("recip_rank", None)]["q"] == 1 / 3
    assert got[("r_precision", None)]["q"] == 1 / 3  # R = 3 relevant: d2 in the top 3
    assert got[("hit_at_k", 1)]["q"] == 0.0 and got[("hit_at_k", 5)]["q"] == 1.0
    trec = pytrec_eval.RelevanceEvaluator(qrels, REQUEST).evaluate(run)["q"]
    assert trec["ndcg"] == pytest.approx(dcg / ideal, rel=1e-15)
