"""``evalstore ingest RUN --format trec --qrels QRELS`` against trec_eval itself
(``pytrec_eval``): a TREC run file and its judgements, written the way TREC tools write them,
ingested through the command line and evaluated under ``--protocol trec`` and ``trec-c``;
map, P_10, recall_10, ndcg, ndcg_cut_10, recip_rank and Rprec equal trec_eval's per query
and in trec_eval's means (without -c over the queries of the run that have judgements, with
-c over every query of the judgements, 0 for those the run lacks: reference_trec.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import pytrec_eval

from evalstore import Store
from tests.conformance.harness import close, values

#: trec_eval measure -> (evalstore metric, the name of its mean)
MEASURES = {
    "map": ("ap", "map"),
    "P_10": ("precision_at_k", "precision_at_k"),
    "recall_10": ("recall_at_k", "recall_at_k"),
    "ndcg": ("ndcg", "ndcg"),
    "ndcg_cut_10": ("ndcg_at_k", "ndcg_at_k"),
    "recip_rank": ("recip_rank", "mrr"),
    "Rprec": ("r_precision", "r_precision"),
}
REQUEST = {"map", "P.10", "recall.10", "ndcg", "ndcg_cut.10", "recip_rank", "Rprec"}


def _judged_run(seed: int) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """qrels and run: grades 0-3, ties (few distinct scores), unjudged retrieved documents,
    judged documents not retrieved, numeric-looking document ids ("10" < "7" as text), a
    query with no relevant document, one judged but not in the run, one in the run but not
    judged."""
    rng = np.random.default_rng(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(30):
        n = int(rng.integers(1, 30))
        docs = [f"d{i}" if q % 3 else str(i * 3 + 1) for i in rng.permutation(n)]
        grades = rng.integers(0, 4, n) if q % 7 else np.zeros(n, dtype=int)
        qrels[f"q{q}"] = {
            d: int(g) for d, g in zip(docs, grades, strict=True) if rng.random() < 0.7
        }
        if not qrels[f"q{q}"]:
            qrels[f"q{q}"] = {docs[0]: int(grades[0])}
        scores = rng.integers(0, 4, n) / 2
        run[f"q{q}"] = {
            d: float(s) for d, s in zip(docs, scores, strict=True) if rng.random() < 0.8
        }
    qrels["only_judged"] = {"x1": 2, "x2": 0}
    run.pop("q1")  # judged, not in the run
    run["only_run"] = {"y1": 1.0, "y2": 0.5}
    return qrels, {q: docs for q, docs in run.items() if docs}


def _write(tmp_path: Path, qrels: dict, run: dict) -> tuple[Path, Path]:
    run_file, qrels_file = tmp_path / "run.txt", tmp_path / "qrels.txt"
    lines = []
    for q, docs in run.items():
        ranked = sorted(docs.items(), key=lambda kv: -kv[1])
        for rank, (d, s) in enumerate(ranked, 1):  # blanks and tabs, as tools write them
            lines.append(f"{q}\tQ0  {d} {rank} {s!r} my-run")
    run_file.write_text("\n".join(lines) + "\n")
    qrels_file.write_text(
        "".join(f"{q} 0 {d} {g}\n" for q, judged in qrels.items() for d, g in judged.items())
    )
    return run_file, qrels_file


@pytest.mark.parametrize("seed", [1, 2])
def test_a_trec_run_file_evaluates_as_trec_eval(
    tmp_path: Path, cli: Any, db: Path, seed: int
) -> None:
    qrels, run = _judged_run(seed)
    run_file, qrels_file = _write(tmp_path, qrels, run)
    result = cli(
        "ingest", str(run_file), "--format", "trec", "--qrels", str(qrels_file),
        "--task", "retrieval", "--run", "trec/r",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "1 query without judgements left out" in result.output  # only_run
    trec = pytrec_eval.RelevanceEvaluator(qrels, REQUEST).evaluate(run)
    assert "only_run" not in trec and "q1" not in trec
    with Store(db) as store:
        for protocol, n_queries in (("trec", len(trec)), ("trec-c", len(qrels))):
            got = values(store, "trec/r", protocol)
            for measure, (metric, mean_name) in MEASURES.items():
                expected = {q: v[measure] for q, v in trec.items()}
                per_list = got.per_list(metric)
                for q, want in expected.items():
                    assert close(per_list[q], want), (protocol, measure, q, per_list[q], want)
                mean = sum(expected.values()) / n_queries  # -c: the missing queries add 0
                assert close(got.mean(mean_name), mean), (protocol, measure)


@pytest.mark.parametrize(
    ("run", "qrels", "message"),
    [
        ("q1 Q0 d1 1 0.5\n", "q1 0 d1 1\n", r"run\.txt line 1: expected 6 fields"),
        ("q1 Q0 d1 1 nan x\n", "q1 0 d1 1\n", r"run\.txt line 1: score 'nan' is not a finite"),
        (
            "q1 Q0 d1 1 0.5 x\nq1 Q0 d1 2 0.4 x\n",
            "q1 0 d1 1\n",
            r"line 2: document 'd1' appears twice",
        ),
        (
            "q1 Q0 d1 1 0.5 x\n",
            "q1 0 d1 -1\n",
            r"qrels\.txt line 1: grade '-1' is not an integer >= 0",
        ),
        ("q1 Q0 d1 1 0.5 x\n", "q1 0 d1 high\n", r"grade 'high' is not an integer"),
        ("q1 Q0 d1 1 0.5 x\n", "q1 0 d1\n", r"qrels\.txt line 1: expected 4 fields"),
        ("", "q1 0 d1 1\n", r"run\.txt: no rows"),
    ],
)
def test_a_bad_trec_file_is_one_line_and_stores_nothing(
    tmp_path: Path, cli: Any, run: str, qrels: str, message: str
) -> None:
    (tmp_path / "run.txt").write_text(run)
    (tmp_path / "qrels.txt").write_text(qrels)
    result = cli(
        "ingest", str(tmp_path / "run.txt"), "--format", "trec",
        "--qrels", str(tmp_path / "qrels.txt"), "--task", "retrieval", "--run", "trec/bad",
    )  # fmt: skip
    assert result.exit_code == 1
    line = result.stderr
    assert line.startswith("Error: ") and line.count("\n") == 1, line
    assert re.search(message, line), line
    assert "trec/bad" not in cli("runs", "--format", "csv").output


def test_trec_needs_its_qrels_and_a_retrieval_task(tmp_path: Path, cli: Any) -> None:
    (tmp_path / "run.txt").write_text("q1 Q0 d1 1 0.5 x\n")
    no_qrels = cli(
        "ingest", str(tmp_path / "run.txt"), "--format", "trec", "-t", "retrieval", "--run", "a/b"
    )
    assert no_qrels.exit_code == 1 and "--format trec needs --qrels FILE" in no_qrels.stderr
    other = cli(
        "ingest", str(tmp_path / "run.txt"), "--format", "trec", "--qrels",
        str(tmp_path / "run.txt"), "-t", "matching", "--run", "a/b",
    )  # fmt: skip
    assert other.exit_code == 1 and "holds retrieval runs, not matching" in other.stderr
