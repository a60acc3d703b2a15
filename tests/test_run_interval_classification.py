"""``evalstore eval --ci`` on the classification metrics whose run value is not a mean over
lists: single-label (``top1_accuracy``, ``ece``, ``f1_macro``...) and multi-label (``of1``,
``cf1_at_k``...). A sample (an image) is drawn with its scores for every class; each
replicate is scikit-learn's number on the drawn samples (docs/statistics.md, "The interval of
one run's value")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score
from typer.testing import CliRunner

from evalstore import Store
from evalstore.analysis import intervals, run_draws
from evalstore.analysis.compare import UNTESTED, compare
from evalstore.analysis.compare_caveats import with_caveats
from evalstore.analysis.intervals import CI
from evalstore.cli import app
from evalstore.metrics.registry import METRICS, Params, RankedLists
from tests.conformance import reference_mlgcn as mlgcn

N, CLASSES = 120, 4


def _single_label(rng: np.random.Generator) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    """Softmax scores of N samples over 4 classes, the true class boosted."""
    truth = rng.integers(0, CLASSES, N)
    logits = rng.normal(size=(N, CLASSES))
    logits[np.arange(N), truth] += 1.0
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    classes = np.tile(np.arange(CLASSES), N)
    rows = {
        "group_id": [f"c{c}" for c in classes],
        "item_id": np.repeat(np.arange(N), CLASSES),
        "score": p.ravel(),
        "label": np.where(classes == np.repeat(truth, CLASSES), 1, -1),
    }
    return rows, truth, p


def _multi_label(rng: np.random.Generator) -> dict[str, Any]:
    present = rng.random((N, CLASSES)) < 0.35
    scores = rng.normal(size=(N, CLASSES)) + 1.5 * present
    classes = np.tile(np.arange(CLASSES), N)
    return {
        "group_id": [f"c{c}" for c in classes],
        "item_id": np.repeat(np.arange(N), CLASSES),
        "score": scores.ravel(),
        "label": np.where(present.ravel(), 1, -1),
    }


@pytest.fixture
def runs(db: Path) -> Path:
    rng = np.random.default_rng(0)
    with Store(db) as store:
        store.ingest(_single_label(rng)[0], task="classification", run="single", git_commit=None)
        store.ingest(_multi_label(rng), task="classification", run="multi", git_commit=None)
    return db


def _eval(db: Path, *args: str) -> tuple[list[dict[str, Any]], str]:
    result = CliRunner().invoke(app, ["eval", *args, "--db", str(db), "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), result.stderr


def test_single_label_metrics_resample_whole_samples(runs: Path) -> None:
    names = ("top1_accuracy", "f1_macro", "f1_micro", "balanced_accuracy", "ece")
    rows, stderr = _eval(runs, "single", *(a for n in names for a in ("-m", n)), "--ci")
    assert {r["metric"] for r in rows} == set(names)
    for r in rows:
        assert r["ci_unit"] == "items", r["metric"]
        assert 0 <= r["ci_low"] <= r["ci_high"] <= 1 and r["ci_low"] < r["ci_high"]
    # four classes: fewer than 5 lists; the two values of the whole run count their lists
    assert (
        stderr.startswith("Warning: intervals from fewer than 5 lists")
        and "top1_accuracy" in stderr
    )


def test_multi_label_metrics_resample_whole_images(runs: Path) -> None:
    rows, _ = _eval(
        runs, "multi", "-m", "of1", "-m", "cf1_at_k", "-m", "cp", "--threshold", "0", "--ci"
    )
    assert {r["metric"] for r in rows} == {"of1", "cf1_at_k", "cp"}
    for r in rows:
        assert r["ci_unit"] == "items" and r["ci_low"] < r["value"] < r["ci_high"]


def test_each_replicate_is_scikit_learn_on_the_drawn_samples(runs: Path) -> None:
    """top1_accuracy and f1_macro: the twin on the drawn samples (each with its 4 rows) equals
    scikit-learn's accuracy_score and f1_score(average="macro") of those samples."""
    _, truth, p = _single_label(np.random.default_rng(0))
    with Store(runs) as store:
        run_id = store.resolve("single")
        inputs = run_draws.read_inputs(store, run_id, "classification", METRICS["top1_accuracy"])
        assert isinstance(inputs, RankedLists)
        got = intervals.interval(
            store,
            run_id,
            "classification",
            METRICS["top1_accuracy"],
            '{"ties":"grouped"}',
            CI(seed=4),
        )
    codes, n = run_draws.item_codes(inputs)
    assert n == N
    sample = np.array([int(i) for i in inputs.items.tolist()])  # each row's sample
    code_of = np.empty(N, dtype=np.int64)
    code_of[sample] = codes  # the item code of each sample
    predicted = p.argmax(axis=1)
    draw = np.random.default_rng(4)
    reps = []  # the first 200 replicates of the interval's seed
    for _ in range(200):
        counts = draw.multinomial(N, np.full(N, 1 / N))
        expanded = run_draws.expand(inputs, counts)
        drawn = np.repeat(np.arange(N), counts[code_of])  # the samples drawn, with repeats
        accuracy = run_draws.run_value(METRICS["top1_accuracy"], expanded, Params())
        macro = run_draws.run_value(METRICS["f1_macro"], expanded, Params())
        assert accuracy == pytest.approx(accuracy_score(truth[drawn], predicted[drawn]), abs=1e-12)
        assert macro == pytest.approx(
            f1_score(
                truth[drawn],
                predicted[drawn],
                average="macro",
                labels=np.arange(CLASSES),
                zero_division=0,
            ),
            abs=1e-12,
        )
        reps.append(accuracy)
    first = run_draws.value_replicates(
        METRICS["top1_accuracy"], inputs, Params(), np.random.default_rng(4), 200
    )
    assert first.tolist() == reps
    assert got.unit == "items" and got.n_lists == CLASSES
    assert 0 < got.low < accuracy_score(truth, predicted) < got.high < 1


def test_each_multi_label_replicate_is_ml_gcns_number_on_the_drawn_images(runs: Path) -> None:
    """of1 and cf1_at_k (threshold 0, k 3): the twin on the drawn images (each with its 4
    class scores) equals ML-GCN's ``overall`` / ``overall_topk(3)`` on the drawn rows of the
    score matrix (tests/conformance/reference_mlgcn.py, the transcription of its util.py)."""
    rng = np.random.default_rng(0)  # as the fixture draws them: the single-label run first
    _single_label(rng)
    data = _multi_label(rng)
    scores = np.asarray(data["score"]).reshape(N, CLASSES)
    targets = np.asarray(data["label"]).reshape(N, CLASSES)
    with Store(runs) as store:
        run_id = store.resolve("multi")
        inputs = run_draws.read_inputs(store, run_id, "classification", METRICS["of1"])
    codes, n = run_draws.item_codes(inputs)
    assert isinstance(inputs, RankedLists) and n == N
    code_of = np.empty(N, dtype=np.int64)
    code_of[np.array([int(i) for i in inputs.items.tolist()])] = codes
    draw = np.random.default_rng(9)
    for _ in range(30):
        counts = draw.multinomial(N, np.full(N, 1 / N))
        expanded = run_draws.expand(inputs, counts)
        drawn = np.repeat(np.arange(N), counts[code_of])
        of1 = run_draws.run_value(METRICS["of1"], expanded, Params(at=[0.0]))
        cf1 = run_draws.run_value(METRICS["cf1_at_k"], expanded, Params(k=3, at=[0.0]))
        assert of1 == pytest.approx(mlgcn.overall(scores[drawn], targets[drawn])[2], rel=1e-12)
        want = mlgcn.overall_topk(scores[drawn], targets[drawn], 3)[5]
        assert cf1 == pytest.approx(want, rel=1e-12)


def test_compare_resamples_samples_where_a_samples_rows_span_the_lists(db: Path) -> None:
    """Below 10 classes, compare resamples items list by list, which would split a sample's
    rows across its class lists: the single-label metrics and the values of the whole run
    (ece, f1_micro) resample whole samples instead (``samples``, tests/test_compare_samples.py),
    never a [0, 0] interval; AP, a mean over classes of each list's own ranking, keeps its
    item test."""
    rng = np.random.default_rng(3)
    with Store(db) as store:
        rows_a = _single_label(rng)[0]  # b: the same samples and truth, other scores
        rows_b = {**rows_a, "score": rows_a["score"] * rng.uniform(0.5, 1.0, len(rows_a["score"]))}
        store.ingest(rows_a, task="classification", run="x/a", git_commit=None)
        store.ingest(rows_b, task="classification", run="x/b", git_commit=None)
        metrics = ["ece", "f1_micro", "f1_macro", "balanced_accuracy", "ap"]
        found = with_caveats(compare(store, ["x/a", "x/b"], metrics=metrics))
    rows = {r["metric"]: r for r in found.to_dicts()}
    for name in ("ece", "f1_micro", "f1_macro", "balanced_accuracy"):
        row = rows[name]
        assert row["resampled"] == "samples" and row["resampled"] not in UNTESTED, row
        assert row["ci_low"] < row["ci_high"] and 0 < row["p_value"] <= 1, row
        assert row["n_lists"] == N and row["caveat"] == "", row
    assert rows["map"]["resampled"] == "items", rows.keys()
    assert rows["map"]["ci_low"] < rows["map"]["ci_high"]
