"""evalstore's multi-label metrics (cp ... of1, their _at_k forms) and ``--protocol mlgcn``
against ML-GCN's own code, transcribed in :mod:`tests.conformance.reference_mlgcn`
(megvii-research/ML-GCN ``util.py`` @ 311f521031b91c59a8bd65a1afe3e6cf9a97916a), through
a real store: the rows ingested as a classification run (a list per class, an item per
image), ``evaluate`` computing in SQL, the values equal to 1e-12.

How evalstore's rows are given to ML-GCN's code: a score matrix (images x classes, columns
in the classes' input order) and a target matrix of 1 / -1; an ignored label (0) or an
(image, class) pair without a row is target 0 with score -inf (neither predicted nor
positive, never ahead of a scored label in the top k); evalstore's threshold t is the scores
shifted by -t (ML-GCN predicts at >= 0).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalstore import Store
from evalstore.analysis.evaluate import evaluate
from evalstore.metrics.protocols import get as protocol
from tests.conformance import reference_mlgcn as mlgcn

NAMES = ("op", "or", "of1", "cp", "cr", "cf1")  # the order ML-GCN's evaluation returns them
REL = 1e-12


def _rows(scores: np.ndarray, targets: np.ndarray) -> dict[str, list[Any]]:
    """The matrix as evalstore's rows, image by image (so the classes' input order is their
    column order); a NaN score = no row, a target 0 = an ignored label."""
    rows: dict[str, list[Any]] = {"group_id": [], "item_id": [], "score": [], "label": []}
    n, c = scores.shape
    for i in range(n):
        for j in range(c):
            if not math.isnan(scores[i, j]):
                rows["group_id"].append(f"class{j:02d}")
                rows["item_id"].append(f"img{i}")
                rows["score"].append(float(scores[i, j]))
                rows["label"].append(int(targets[i, j]))
    return rows


def _reference(
    scores: np.ndarray, targets: np.ndarray, threshold: float, k: int | None
) -> dict[str, float]:
    """ML-GCN's six numbers of evalstore's rows (the module's mapping)."""
    missing = np.isnan(scores) | (targets == 0)
    shifted = np.where(missing, -np.inf, scores - threshold)
    given = np.where(missing, 0, targets)
    values = mlgcn.overall(shifted, given) if k is None else mlgcn.overall_topk(shifted, given, k)
    return dict(zip(NAMES, (float(v) for v in values), strict=True))


def _stored(store: Store, run: str, names: list[str], **kw: Any) -> dict[Any, float | None]:
    """The run's values by metric, and by (metric, threshold)."""
    frame = evaluate(store, [run], metrics=names, **kw)
    out: dict[Any, float | None] = {}
    for r in frame.filter(frame["slice"] == "").to_dicts():
        out[r["metric"]] = out[(r["metric"], json.loads(r["params"])["threshold"])] = r["value"]
    return out


def _same(got: float | None, want: float, what: str) -> None:
    if math.isnan(want):
        assert got is None or math.isnan(got), f"{what}: {got}, ML-GCN NaN"
    else:
        assert got is not None and math.isclose(got, want, rel_tol=REL, abs_tol=0), (
            f"{what}: {got}, ML-GCN {want}"
        )


THRESHOLDS = (0.0, 0.5, -0.25)


def _check(store: Store, run: str, scores: np.ndarray, targets: np.ndarray) -> None:
    rows = _rows(scores, targets)
    store.ingest(rows, task="classification", run=run, labels="pm1", git_commit=None)
    sweep = {"threshold": list(THRESHOLDS)}  # every threshold in one query
    got = _stored(store, run, list(NAMES), sweeps=sweep)
    for t in THRESHOLDS:
        for name, want in _reference(scores, targets, t, None).items():
            _same(got[(name, t)], want, f"{run} {name} @ {t}")
    for k in (1, 3, 5):
        got = _stored(store, run, [f"{n}_at_k" for n in NAMES], sweeps=sweep, k=k, ties="input")
        for t in THRESHOLDS:
            for name, want in _reference(scores, targets, t, k).items():
                _same(got[(f"{name}_at_k", t)], want, f"{run} {name}_at_k k={k} @ {t}")


def _matrix(rng: np.random.Generator, n: int, c: int, ties: bool) -> tuple[np.ndarray, ...]:
    scores = rng.standard_normal((n, c))
    if ties:
        scores = np.round(scores * 2) / 2  # few distinct values: ties in rows and columns
    targets = rng.choice([-1, -1, -1, 1], size=(n, c))
    return scores, targets


@pytest.mark.parametrize("seed", range(2))
def test_generated_runs_equal_mlgcn(tmp_path: Path, seed: int) -> None:
    """COCO-like runs (ML-GCN's targets are 1 / -1), with and without ties, logits around 0."""
    rng = np.random.default_rng(seed)
    with Store(tmp_path / "s.duckdb") as store:
        for i, (n, c) in enumerate([(30, 8), (5, 12), (1, 3), (60, 4)]):
            scores, targets = _matrix(rng, n, c, ties=i % 2 == 0)
            targets[:, 0] = 1  # every class has a positive: ML-GCN's CR is then a number
            targets[0, :] = np.where(rng.random(c) < 0.5, 1, targets[0, :])
            _check(store, f"mlgcn/{seed}-{i}", scores, targets)


def test_ignored_labels_and_missing_rows_equal_mlgcn_with_target_0(tmp_path: Path) -> None:
    """An ignored label and a pair without a row are ML-GCN's target 0 at score -inf: they
    count nowhere, and take no place of the top k."""
    rng = np.random.default_rng(7)
    scores, targets = _matrix(rng, 25, 6, ties=True)
    targets[rng.random(targets.shape) < 0.15] = 0
    scores[rng.random(scores.shape) < 0.1] = np.nan
    scores[0, :] = 3.0  # an image whose best labels are ignored: its top k is the rest
    targets[0, :3] = 0
    with Store(tmp_path / "s.duckdb") as store:
        _check(store, "mlgcn/ignored", scores, targets)


def test_guards_and_nans_equal_mlgcn(tmp_path: Path) -> None:
    """ML-GCN's guard (Np = 1 for a class never predicted) and its 0 / 0s: a class without
    positives makes CR and CF1 NaN (evalstore: null); nothing predicted makes OF1 NaN."""
    scores = np.array([[2.0, -1.0, -1.0], [1.0, -2.0, -0.5], [-1.0, -1.0, -3.0]])
    targets = np.array([[1, -1, 1], [-1, -1, 1], [1, -1, -1]])
    with Store(tmp_path / "s.duckdb") as store:
        _check(store, "mlgcn/guard", scores, targets)  # class 1: no positive
        got = _stored(store, "mlgcn/guard", ["cr", "cp", "of1"], sweeps={"threshold": [0.0]})
        assert got["cr"] is None  # NaN in ML-GCN
        # class 0: 2 predicted, 1 right; classes 1 and 2: never predicted, Np = 1, 0 right
        assert got["cp"] == pytest.approx((1 / 2) / 3, rel=REL)
        nothing = np.full((2, 2), -1.0)
        _check(store, "mlgcn/nothing", nothing, np.array([[1, -1], [-1, 1]]))
        got = _stored(store, "mlgcn/nothing", ["of1", "op"], sweeps={"threshold": [0.0]})
        assert got["of1"] is None and got["op"] == 0.0


def test_hand_worked_case() -> None:
    """The transcription itself on a case worked by hand: 3 images, 3 classes, at 0.

    class 0: Ng 2, Np 2, Nc 1; class 1: Ng 1, Np 1, Nc 1; class 2: Ng 1, Np 0 -> 1, Nc 0.
    OP = 2 / 4, OR = 2 / 4; CP = (1/2 + 1 + 0) / 3 = 1/2, CR = (1/2 + 1 + 0) / 3 = 1/2.
    Top 1: image 0 keeps class 0 (3.0), image 1 class 1 (0.5), image 2 class 0 (2.0):
    class 0: Np 2, Nc 1; class 1: Np 1, Nc 1; class 2: Np 0 -> 1: the same counts.
    """
    scores = np.array([[3.0, -1.0, -2.0], [-1.0, 0.5, -0.5], [2.0, -3.0, -1.0]])
    targets = np.array([[1, -1, -1], [1, 1, -1], [-1, -1, 1]])
    assert mlgcn.overall(scores, targets) == (0.5, 0.5, 0.5, 0.5, 0.5, 0.5)
    assert mlgcn.overall_topk(scores, targets, 1) == (0.5, 0.5, 0.5, 0.5, 0.5, 0.5)
    assert mlgcn.overall_topk(scores, targets, 3) == mlgcn.overall(scores, targets)


def test_protocol_mlgcn_reports_its_table(tmp_path: Path) -> None:
    """``--protocol mlgcn``: threshold 0, k 3, ties in input order, ML-GCN's numbers and mAP
    (``average_precision(difficult_examples=True)``, transcribed below)."""
    rng = np.random.default_rng(3)
    scores, targets = _matrix(rng, 40, 5, ties=False)
    targets[:2, :] = 1
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(
            _rows(scores, targets), task="classification", run="p", labels="pm1", git_commit=None
        )
        frame = evaluate(store, ["p"], protocol="mlgcn")
    rows = {r["metric"]: r for r in frame.filter(frame["slice"] == "").to_dicts()}
    assert set(rows) == {"map", *NAMES, *(f"{n}_at_k" for n in NAMES)}
    assert all('"protocol":"mlgcn"' in r["params"] for r in rows.values())
    assert all('"threshold":0.0' in r["params"] for n, r in rows.items() if n != "map")
    assert all('"k":3' in r["params"] for n, r in rows.items() if n.endswith("_at_k"))
    for name, want in _reference(scores, targets, 0.0, None).items():
        _same(rows[name]["value"], want, f"mlgcn {name}")
    for name, want in _reference(scores, targets, 0.0, 3).items():
        _same(rows[f"{name}_at_k"]["value"], want, f"mlgcn {name}_at_k")
    aps = [mlgcn.average_precision(scores[:, j], targets[:, j]) for j in range(5)]
    _same(rows["map"]["value"], float(np.mean(aps)), "mlgcn map")
    assert protocol("mlgcn").k == 3 and protocol("mlgcn").ties == "input"
