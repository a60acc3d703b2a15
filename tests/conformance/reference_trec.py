"""trec_eval itself, through ``pytrec_eval`` (pytrec-eval-terrier: trec_eval's C code as a
Python extension), for the protocols ``trec`` (trec_eval) and ``trec-c`` (trec_eval -c).

``pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)`` returns per-query values
only; the means are computed here as trec_eval computes them (usnistgov/trec_eval @
0e041ae2351fac4ab44c7cab9ff9a8fbcff1ac7b, ``trec_eval.c`` and ``meas_avg.c``)::

    /* For each topic which has both qrels and top results information,
       calculate, possibly print (if query_flag), and accumulate
       evaluation measures. */
    for (i = 0; i < all_results.num_q_results; i++) {
        ... (skip if no rel info) ...
        accum_eval.num_queries++;
    }
    ...
    te_calc_avg_meas_s(...)
    {
        long num_queries = accum_eval->num_queries;
        if (epi->average_complete_flag)
            num_queries = all_rel_info->num_q_rels;
        if (num_queries)
            accum_eval->values[tm->eval_index].value /= num_queries;

i.e. the sum over the queries of the run that have judgements, divided by their number
(without ``-c``) or by the number of queries in the judgements (``-c``: a query of the
judgements that the run does not have contributes 0).

One caution: a run file never holds a query without retrieved documents, but a run *dict*
can: ``pytrec_eval`` evaluates ``{"q": {}}`` as a query of the run (values 0, counted).
:func:`run_of` therefore leaves such queries out, as a file would.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import pytrec_eval

from tests.conformance.harness import Ranked


@dataclass
class TrecResult:
    per_query: dict[str, dict[str, float]]  # pytrec_eval's answer: query -> measure -> value
    means: dict[str, float]  # trec_eval's "all" line
    num_q: int  # trec_eval's num_q: the queries averaged


def qrels_of(lists: Iterable[Ranked], *, unjudged_zero: bool = False) -> dict[str, dict[str, int]]:
    """Judgements: +1 -> relevance 1, -1 -> 0 (judged non-relevant). A label 0 (evalstore's
    "ignored") has no qrels counterpart; with ``unjudged_zero`` it is left out of the qrels
    (an unjudged document, which only ``-J`` removes from the ranking)."""
    qrels: dict[str, dict[str, int]] = {}
    for lst in lists:
        judged = qrels.setdefault(lst.group, {})
        for item, label in zip(lst.items, lst.labels.tolist(), strict=True):
            if label == 0:
                if unjudged_zero:
                    continue
                raise ValueError("label 0 has no trec_eval counterpart without -J")
            judged[str(item)] = 1 if label == 1 else 0
    return qrels


def run_of(lists: Iterable[Ranked]) -> dict[str, dict[str, float]]:
    """The run: every retrieved (finite score) document; a query with none is not in it."""
    run: dict[str, dict[str, float]] = {}
    for lst in lists:
        docs = {
            str(item): float(score)
            for item, score in zip(lst.items, lst.scores.tolist(), strict=True)
            if score != float("-inf")
        }
        if docs:
            run[lst.group] = docs
    return run


def trec_eval(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    *,
    complete: bool,
    k: int = 10,
    judged_docs_only: bool = False,
) -> TrecResult:
    """map, P_k and recall_k per query (``pytrec_eval``) and their means as trec_eval prints
    them (``complete`` = ``-c``; ``judged_docs_only`` = ``-J``)."""
    measures = {"map", f"P.{k}", f"recall.{k}"}
    evaluator = pytrec_eval.RelevanceEvaluator(
        dict(qrels), measures, judged_docs_only_flag=judged_docs_only
    )
    per_query = evaluator.evaluate(dict(run))
    num_q = len(qrels) if complete else len(per_query)
    names = ("map", f"P_{k}", f"recall_{k}")
    means = {m: sum(v[m] for v in per_query.values()) / num_q for m in names}
    return TrecResult(per_query, means, num_q)
