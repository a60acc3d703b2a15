"""The single-label classification metrics through the real store (ingest, ``evaluate``, the
CLI) against their references: scikit-learn's ``top_k_accuracy_score``, ``f1_score``,
``balanced_accuracy_score`` and ``recall_score`` (installed, run here), and a transcription of
torchmetrics' ``calibration_error`` (below, quoted with its repository, path and commit); the
checks that refuse a run unfit for them; and ``--bins`` / ``--k`` as parameters recorded
with the values."""

from __future__ import annotations

import json
import warnings
from itertools import count
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from single_label_data import rows_of
from sklearn.metrics import (
    balanced_accuracy_score,
    f1_score,
    recall_score,
    top_k_accuracy_score,
)
from typer.testing import CliRunner

from evalstore import Store
from evalstore.analysis.evaluate import evaluate
from evalstore.cli import app
from evalstore.core import single_label as core
from evalstore.core.points import TIES
from evalstore.errors import InvalidInput
from evalstore.metrics.registry import METRICS, Params, RankedLists

_RUN = count()
_SETTINGS = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
}
NAMES = ("top1_accuracy", "topk_accuracy", "balanced_accuracy", "f1_macro", "f1_micro", "ece")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    with Store(Path(tmp_path_factory.mktemp("single")) / "s.duckdb") as s:
        yield s


def _ingest(store: Store, rows: dict[str, Any]) -> str:
    name = f"single/{next(_RUN)}"
    store.ingest(rows, task="classification", run=name, labels="pm1", git_commit=None)
    return name


def _values(store: Store, run: str, metric: str, **kwargs: Any) -> dict[Any, float]:
    """The run's value (key None) and each class's (``--by class``)."""
    frame = evaluate(store, [run], metrics=[metric], by=["class"], **kwargs)
    return {
        (None if s == "" else s.removeprefix("class=")): v
        for s, v in zip(frame["slice"], frame["value"], strict=True)
    }


# -- torchmetrics' calibration_error, transcribed ----------------------------------------------
#
# Lightning-AI/torchmetrics, src/torchmetrics/functional/classification/calibration_error.py @
# 660df0d699c4da98d9f0abd7cdbc4798d300ab6e. The lines that define the number:
#
#   def _binning_bucketize(confidences, accuracies, bin_boundaries):
#       accuracies = accuracies.to(dtype=confidences.dtype)
#       acc_bin = torch.zeros(len(bin_boundaries), ...)
#       conf_bin = torch.zeros(len(bin_boundaries), ...)
#       count_bin = torch.zeros(len(bin_boundaries), ...)
#       indices = torch.bucketize(confidences, bin_boundaries, right=True) - 1
#       count_bin.scatter_add_(dim=0, index=indices, src=torch.ones_like(confidences))
#       conf_bin.scatter_add_(dim=0, index=indices, src=confidences)
#       conf_bin = torch.nan_to_num(conf_bin / count_bin)
#       acc_bin.scatter_add_(dim=0, index=indices, src=accuracies)
#       acc_bin = torch.nan_to_num(acc_bin / count_bin)
#       prop_bin = count_bin / count_bin.sum()
#       return acc_bin, conf_bin, prop_bin
#
#   def _ce_compute(confidences, accuracies, bin_boundaries, norm="l1", debias=False):
#       if isinstance(bin_boundaries, int):
#           bin_boundaries = torch.linspace(0, 1, bin_boundaries + 1, dtype=torch.float, ...)
#       ...
#           acc_bin, conf_bin, prop_bin = _binning_bucketize(confidences, accuracies,
#                                                            bin_boundaries)
#       if norm == "l1":
#           return torch.sum(torch.abs(acc_bin - conf_bin) * prop_bin)
#
#   def _multiclass_calibration_error_update(preds, target):
#       if not torch.all((preds >= 0) * (preds <= 1)):
#           preds = preds.softmax(1)
#       confidences, predictions = preds.max(dim=1)
#       accuracies = predictions.eq(target)
#       return confidences.float(), accuracies.float()
#
# In NumPy, float64: torch.bucketize(x, b, right=True) is np.searchsorted(b, x, side="right")
# (the index of the first boundary > x), scatter_add_ is np.add.at, torch.linspace(0, 1, n)
# is np.linspace (evalstore's edges: float64, NumPy's values); nan_to_num of 0/0 is 0. Our
# inputs are probabilities, so the softmax branch is never taken (evalstore refuses others).


def _binning_bucketize(
    confidences: np.ndarray, accuracies: np.ndarray, bin_boundaries: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    accuracies = accuracies.astype(confidences.dtype)
    acc_bin = np.zeros(len(bin_boundaries), dtype=confidences.dtype)
    conf_bin = np.zeros(len(bin_boundaries), dtype=confidences.dtype)
    count_bin = np.zeros(len(bin_boundaries), dtype=confidences.dtype)
    indices = np.searchsorted(bin_boundaries, confidences, side="right") - 1
    np.add.at(count_bin, indices, np.ones_like(confidences))
    np.add.at(conf_bin, indices, confidences)
    with np.errstate(invalid="ignore", divide="ignore"):
        conf_bin = np.nan_to_num(conf_bin / count_bin)
        np.add.at(acc_bin, indices, accuracies)
        acc_bin = np.nan_to_num(acc_bin / count_bin)
    prop_bin = count_bin / count_bin.sum()
    return acc_bin, conf_bin, prop_bin


def _ce_compute(confidences: np.ndarray, accuracies: np.ndarray, n_bins: int) -> float:
    bin_boundaries = np.linspace(0, 1, n_bins + 1, dtype=np.float64)
    acc_bin, conf_bin, prop_bin = _binning_bucketize(confidences, accuracies, bin_boundaries)
    return float(np.sum(np.abs(acc_bin - conf_bin) * prop_bin))


def _multiclass_calibration_error_update(
    preds: np.ndarray, target: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    assert np.all((preds >= 0) * (preds <= 1))  # probabilities: no softmax
    confidences, predictions = preds.max(axis=1), preds.argmax(axis=1)
    accuracies = predictions == target
    return confidences.astype(np.float64), accuracies.astype(np.float64)


def torchmetrics_ece(preds: np.ndarray, target: np.ndarray, n_bins: int) -> float:
    """``multiclass_calibration_error(preds, target, num_classes, n_bins, norm="l1")``."""
    confidences, accuracies = _multiclass_calibration_error_update(preds, target)
    return _ce_compute(confidences, accuracies, n_bins)


def test_the_transcription_reproduces_the_docstring_example() -> None:
    """torchmetrics' own example (multiclass_calibration_error's docstring): 0.2000."""
    preds = np.array(
        [[0.25, 0.20, 0.55], [0.55, 0.05, 0.40], [0.10, 0.30, 0.60], [0.90, 0.05, 0.05]]
    )
    assert torchmetrics_ece(preds, np.array([0, 1, 2, 0]), 3) == pytest.approx(0.2, abs=1e-7)


def _distinct_rows(draw: Any, n_s: int, n_c: int, steps: int) -> np.ndarray:
    """(n_s, n_c) scores k / steps, each row's values distinct (no tie for the top-1)."""
    rows = [
        draw(st.lists(st.integers(0, steps), min_size=n_c, max_size=n_c, unique=True))
        for _ in range(n_s)
    ]
    return np.array(rows, dtype=np.float64) / steps


@pytest.mark.slow  # hypothesis through the store: the seeded cases below are fast
@settings(max_examples=examples(40), **_SETTINGS)
@given(data=st.data())
def test_ece_equals_torchmetrics(store: Store, data: st.DataObject) -> None:
    """Scores on the bin edges (k / 10, k / 20, 1.0 and 0.0 included), no tie for the top-1:
    SQL through evaluate, the NumPy twin and the transcription agree, at every bin count."""
    n_c, n_s = data.draw(st.integers(2, 5)), data.draw(st.integers(1, 30))
    preds = _distinct_rows(data.draw, n_s, n_c, data.draw(st.sampled_from([10, 20, 1000])))
    target = np.array(data.draw(st.lists(st.integers(0, n_c - 1), min_size=n_s, max_size=n_s)))
    bins = data.draw(st.lists(st.sampled_from([1, 2, 3, 7, 10, 15, 20]), min_size=1,
                              max_size=3, unique=True))  # fmt: skip
    _check_ece(store, preds, target, bins)


def _check_ece(store: Store, preds: np.ndarray, target: np.ndarray, bins: list[int]) -> None:
    n_s, n_c = preds.shape
    run = _ingest(store, rows_of(preds, target))
    frame = evaluate(store, [run], metrics=["ece"], sweeps={"bins": bins})
    got = {json.loads(p)["bins"]: v for p, v in zip(frame["params"], frame["value"], strict=True)}
    for b in bins:
        want = torchmetrics_ece(preds, target, b)
        assert got[float(b)] == pytest.approx(want, rel=1e-12, abs=1e-15), b
        s = core.SampleMatrix(np.arange(n_c), np.arange(n_s), preds,
                              np.ones(preds.shape, dtype=bool), target)  # fmt: skip
        twin = core.ece(core.confidences(s), core.hits(s, "input", 1), b)
        assert twin == pytest.approx(want, rel=1e-12, abs=1e-15), b


def test_ece_equals_torchmetrics_seeded(store: Store) -> None:
    """The same on a seeded run: tenths (on the edges of 10 bins), a 1.0, no tie at the top."""
    rng = np.random.default_rng(5)
    preds = np.array([rng.permutation(11)[:4] for _ in range(60)], dtype=np.float64) / 10
    _check_ece(store, preds, rng.integers(0, 4, 60), [1, 3, 10, 15])


def test_ece_places_edges_and_one_as_torchmetrics() -> None:
    """A confidence on an edge opens the bin above it (0.2 = 2 * 0.1 in bin 2), 0.3 lies
    below its edge 0.30000000000000004 (bin 2 too), and 1.0 is a bin of its own (index B)."""
    conf = np.array([0.0, 0.2, 0.3, 0.6, 0.99, 1.0])
    edges = np.linspace(0, 1, 11)
    assert core.bin_of(conf, 10).tolist() == (np.searchsorted(edges, conf, "right") - 1).tolist()
    assert core.bin_of(conf, 10).tolist() == [0, 2, 2, 5, 9, 10]
    # one sample at 1.0, right: a bin of its own with no error, not merged with 0.95's
    acc = np.array([1.0, 0.0])
    assert core.ece(np.array([1.0, 0.95]), acc, 10) == _ce_compute(np.array([1.0, 0.95]), acc, 10)
    assert core.ece(np.array([1.0, 0.95]), acc, 10) == pytest.approx(0.95 / 2)


# -- scikit-learn ---------------------------------------------------------------------------------


def _sklearn(y: np.ndarray, scores: np.ndarray, top1: np.ndarray, k: int) -> dict[str, Any]:
    n_c = scores.shape[1]
    labels = np.arange(n_c)
    with warnings.catch_warnings():  # "y_pred contains classes not in y_true": expected here
        warnings.simplefilter("ignore", UserWarning)
        balanced = balanced_accuracy_score(y, top1)
    present = sorted(set(y.tolist()))
    return {
        "top1_accuracy": float(np.mean(top1 == y)),
        "topk_accuracy": top_k_accuracy_score(y, scores, k=k, labels=labels),
        "balanced_accuracy": balanced,
        "f1_macro": f1_score(y, top1, average="macro", zero_division=0.0),
        "f1_micro": f1_score(y, top1, average="micro", zero_division=0.0),
        "recall": dict(zip(present, recall_score(y, top1, labels=present, average=None,
                                                  zero_division=0.0), strict=True)),
    }  # fmt: skip


def _check_against_sklearn(
    store: Store, scores: np.ndarray, y: np.ndarray, k: int, order: np.ndarray, ties: list[str]
) -> None:
    """Every policy of ``ties`` gives scikit-learn's values, the top-1 class being the first
    column at the top (np.argmax), the lists stored in ``order``."""
    n_c = scores.shape[1]
    names = [f"c{j}" for j in range(n_c)]
    run = _ingest(store, rows_of(scores, y, class_order=order, names=names))
    first = {j: int(np.flatnonzero(order == j)[0]) for j in range(n_c)}  # list position
    top = scores.max(axis=1, keepdims=True) == scores
    top1 = np.array([min(np.flatnonzero(r), key=first.__getitem__) for r in top])
    want = _sklearn(y, scores, top1, k)
    for policy in ties:
        for name in NAMES[:-1]:
            got = _values(store, run, name, ties=policy, k=k)
            assert got[None] == pytest.approx(want[name], rel=1e-12, abs=1e-15), (name, policy)
            if name == "top1_accuracy":  # each class's value: its recall
                for j, recall in want["recall"].items():
                    assert got[names[j]] == pytest.approx(recall, rel=1e-12), (j, policy)


@pytest.mark.slow  # hypothesis through the store: the seeded cases below are fast
@settings(max_examples=examples(40), **_SETTINGS)
@given(data=st.data())
def test_sklearn_without_ties(store: Store, data: st.DataObject) -> None:
    """Tie-free scores: every tie policy gives scikit-learn's values."""
    n_c, n_s = data.draw(st.integers(3, 6)), data.draw(st.integers(1, 40))
    scores = _distinct_rows(data.draw, n_s, n_c, 1000)
    y = np.array(data.draw(st.lists(st.integers(0, n_c - 1), min_size=n_s, max_size=n_s)))
    k = data.draw(st.integers(1, n_c - 1))  # scikit-learn warns at k >= n_classes
    order = np.array(data.draw(st.permutations(list(range(n_c)))))
    _check_against_sklearn(store, scores, y, k, order, list(TIES))


@pytest.mark.slow  # hypothesis through the store: the seeded cases below are fast
@settings(max_examples=examples(40), **_SETTINGS)
@given(data=st.data())
def test_sklearn_with_ties_where_the_rules_agree(store: Store, data: st.DataObject) -> None:
    """Heavy ties under ``input`` ties: top-1 as np.argmax (the lists in column order), and
    top-k as scikit-learn's argsort, which puts the *last* tied column first (the lists in
    reverse column order)."""
    n_c, n_s = data.draw(st.integers(3, 6)), data.draw(st.integers(1, 40))
    flat = data.draw(st.lists(st.integers(0, 2), min_size=n_s * n_c, max_size=n_s * n_c))
    scores = np.array(flat, dtype=np.float64).reshape(n_s, n_c) / 2
    y = np.array(data.draw(st.lists(st.integers(0, n_c - 1), min_size=n_s, max_size=n_s)))
    k = data.draw(st.integers(1, n_c - 1))
    _check_tied(store, scores, y, k)


def _check_tied(store: Store, scores: np.ndarray, y: np.ndarray, k: int) -> None:
    n_c = scores.shape[1]
    forward, backward = np.arange(n_c), np.arange(n_c)[::-1].copy()
    run = _ingest(store, rows_of(scores, y, class_order=backward))
    got = _values(store, run, "topk_accuracy", ties="input", k=k)[None]
    assert got == top_k_accuracy_score(y, scores, k=k, labels=np.arange(n_c))
    top1 = scores.argmax(axis=1)
    want = _sklearn(y, scores, top1, k)
    run = _ingest(store, rows_of(scores, y, class_order=forward))
    for name in ("top1_accuracy", "balanced_accuracy", "f1_macro", "f1_micro"):
        got = _values(store, run, name, ties="input")[None]
        assert got == pytest.approx(want[name], rel=1e-12, abs=1e-15), name


@pytest.mark.parametrize("seed", [1, 2])
def test_sklearn_seeded(store: Store, seed: int) -> None:
    """Seeded runs of 5 classes: tie-free under every policy, and tied (halves) under input."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 5, 50)
    scores = np.array([rng.permutation(5) for _ in range(50)], dtype=np.float64) / 4
    _check_against_sklearn(store, scores, y, 2, rng.permutation(5), list(TIES))
    _check_tied(store, rng.integers(0, 3, (50, 5)) / 2, y, 3)


def test_per_class_f1_is_sklearns() -> None:
    """f1_macro's class rows are f1_score(average=None), a class never true nor predicted
    None (NaN), left out of the mean as scikit-learn leaves it out of its labels."""
    rng = np.random.default_rng(3)
    scores, y = rng.random((50, 4)), rng.integers(0, 3, 50)  # class 3: never true
    scores[:, 3] = -1.0  # and never predicted
    got = METRICS["f1_macro"].reference(_lists(rows_of(scores, y)), Params(ties="input"))
    want = f1_score(y, scores.argmax(axis=1), average=None, labels=[0, 1, 2])
    np.testing.assert_allclose(got.value[:3], want, rtol=1e-12)
    assert np.isnan(got.value[3])
    assert np.nanmean(got.value) == pytest.approx(f1_score(y, scores.argmax(axis=1),
                                                           average="macro"), rel=1e-12)  # fmt: skip


def _lists(rows: dict[str, Any]) -> RankedLists:
    """Rows as the twins read them (classes in the order of their first rows)."""
    objects = {c: np.asarray(rows[c], dtype=object) for c in ("group_id", "item_id")}
    return RankedLists(objects["group_id"], np.asarray(rows["score"], dtype=np.float64),
                       np.asarray(rows["label"]), items=objects["item_id"])  # fmt: skip


# -- refused runs, parameters, the command line ---------------------------------------------------


def _bad(kind: str) -> dict[str, Any]:
    scores = np.array([[0.6, 0.4], [0.3, 0.7], [0.5, 0.5]])
    rows = rows_of(scores, np.array([0, 1, 0]))
    keep = np.ones(len(rows["label"]), dtype=bool)
    if kind == "two positives":
        rows["label"][1] = 1  # s1 (true c1) is +1 in c0's list too
    elif kind == "missing":
        keep[5] = False  # s2 has no row in c1's list
    else:
        rows["score"][1] = 1.5
    return {c: np.asarray(v)[keep] for c, v in rows.items()}


@pytest.mark.parametrize(
    ("kind", "metric", "message"),
    [
        ("two positives", "top1_accuracy", "sample 's1' has 2 positive labels (+1)"),
        ("missing", "f1_macro", "sample 's2' is in 1 of the run's 2 class lists"),
        ("probability", "ece", "sample 's1': score 1.5 of class 'c0' is not a probability"),
    ],
)
def test_an_unfit_run_is_refused_naming_run_and_sample(
    store: Store, kind: str, metric: str, message: str
) -> None:
    run = _ingest(store, _bad(kind))
    with pytest.raises(InvalidInput) as caught:
        evaluate(store, [run], metrics=[metric])
    assert message in str(caught.value) and f"run {run}" in str(caught.value)
    assert "\n" not in str(caught.value)
    if kind != "probability":  # the twin refuses it too
        rows = _bad(kind)
        with pytest.raises(InvalidInput, match="sample 's"):
            METRICS[metric].reference(_lists(rows), Params())


def test_a_score_outside_zero_one_is_fine_but_for_ece(store: Store) -> None:
    """s0 right, s1 wrong (c0's 1.5 above its c1), s2 a tie of its true c0 with c1: 1/2."""
    run = _ingest(store, _bad("probability"))
    assert _values(store, run, "top1_accuracy")[None] == (1 + 0 + 1 / 2) / 3


def _cli(db: Path, *args: str) -> Any:
    result = CliRunner().invoke(app, ["eval", *args, "--db", str(db), "--format", "json"])
    return result


def test_cli_eval_top1_accuracy_bins_and_k(tmp_path: Path) -> None:
    """`evalstore eval RUN -m top1_accuracy` prints scikit-learn's accuracy; --bins and the
    default --k are recorded in params and cached apart; --bins refuses a fraction."""
    db = tmp_path / "e.duckdb"
    rng = np.random.default_rng(11)
    probs = rng.dirichlet(np.ones(6), size=80)
    y = rng.integers(0, 6, 80)
    with Store(db) as store:
        run = _ingest(store, rows_of(probs, y))
    result = _cli(db, run, "-m", "top1_accuracy", "-m", "topk_accuracy")
    assert result.exit_code == 0, result.output
    rows = {r["metric"]: r for r in json.loads(result.output)}
    assert rows["top1_accuracy"]["value"] == pytest.approx(np.mean(probs.argmax(1) == y), rel=1e-12)
    assert rows["topk_accuracy"]["params"]["k"] == 5
    assert rows["topk_accuracy"]["value"] == pytest.approx(
        top_k_accuracy_score(y, probs, k=5, labels=np.arange(6)), rel=1e-12
    )
    assert rows["top1_accuracy"]["run"] == run
    for bins in ("10", "15", "10,15"):
        result = _cli(db, run, "-m", "ece", "--bins", bins)
        assert result.exit_code == 0, result.output
        got = {r["params"]["bins"]: r["value"] for r in json.loads(result.output)}
        assert sorted(got) == sorted(float(b) for b in bins.split(","))
        for b, value in got.items():
            assert value == pytest.approx(torchmetrics_ece(probs, y, int(b)), rel=1e-12)
    with Store(db, read_only=True) as store:
        stored = store.con.execute(
            "select params from metric_values where metric = 'ece' order by params"
        ).fetchall()  # test-only: both bin counts cached apart
    assert [json.loads(p)["bins"] for (p,) in stored] == [10.0, 15.0]
    result = _cli(db, run, "-m", "ece", "--bins", "2.5")
    assert result.exit_code == 1 and "--bins needs whole numbers >= 1" in result.output
    # -m f1 names both averages (a metric's family before difflib's near spellings)
    result = _cli(db, run, "-m", "f1")
    assert result.exit_code == 1
    assert "did you mean 'f1_macro' or 'f1_micro'?" in result.output, result.output
