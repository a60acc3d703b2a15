"""The demo: real evaluation runs recorded over several weeks, metrics and dashboards.

Two experiments, from data that ships with scikit-learn and scikit-image (no network):

- ``digits``: multi-label classification, PASCAL VOC style. Real classifiers (logistic
  regression at three regularisations, naive Bayes, k-NN, two MLPs) trained on scikit-learn's
  handwritten digits; one-vs-rest scores on the held-out half make one ranked list per class,
  evaluated with VOC 2007 and 2010 AP and their mean.
- ``hpatches``: the HPatches protocol on sequences made from scikit-image's photographs with
  known homographies (viewpoint) and photometric changes (illumination); OpenCV's SIFT, ORB,
  AKAZE, BRISK and a deliberately weakened SIFT give patch verification, image matching and
  patch retrieval lists, plus real keypoint matches for precision@sigma, MMA and homography
  accuracy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from evalstore.errors import EvalstoreError

if TYPE_CHECKING:
    from evalstore.store import Progress, Store

__all__ = ["DemoResult", "build"]

START = datetime(2026, 9, 7, 9, 30)


@dataclass
class DemoResult:
    """What the demo wrote."""

    runs: list[str] = field(default_factory=list)
    dashboards: list[Path] = field(default_factory=list)
    seconds: float = 0.0


def _need(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise EvalstoreError(
            f"the demo needs {module.split('.')[0]}: pip install 'evalstore[demo]'"
        ) from None


# -- digits: VOC-style classification ---------------------------------------------------------


def _classifiers() -> list[tuple[str, dict[str, Any], list[str], Callable[[], Any]]]:
    linear = _need("sklearn.linear_model")
    neighbors = _need("sklearn.neighbors")
    bayes = _need("sklearn.naive_bayes")
    neural = _need("sklearn.neural_network")
    pipeline = _need("sklearn.pipeline")
    prep = _need("sklearn.preprocessing")

    def scaled(model: Any) -> Any:
        return pipeline.make_pipeline(prep.StandardScaler(), model)

    return [
        ("naive-bayes", {"model": "gaussian_nb"}, ["baseline"], bayes.GaussianNB),
        (
            "logreg-c0.001",
            {"model": "logistic_regression", "C": 0.001},
            ["linear"],
            lambda: scaled(linear.LogisticRegression(C=0.001, max_iter=1000)),
        ),
        (
            "logreg-c0.1",
            {"model": "logistic_regression", "C": 0.1},
            ["linear"],
            lambda: scaled(linear.LogisticRegression(C=0.1, max_iter=1000)),
        ),
        (
            "knn-5",
            {"model": "knn", "k": 5},
            ["nonparametric"],
            lambda: neighbors.KNeighborsClassifier(n_neighbors=5),
        ),
        (
            "logreg-c1",
            {"model": "logistic_regression", "C": 1.0},
            ["linear"],
            lambda: scaled(linear.LogisticRegression(C=1.0, max_iter=2000)),
        ),
        (
            "mlp-32",
            {"model": "mlp", "hidden": 32},
            ["neural"],
            lambda: scaled(neural.MLPClassifier((32,), max_iter=400, random_state=0)),
        ),
        (
            "mlp-128",
            {"model": "mlp", "hidden": 128},
            ["neural", "best"],
            lambda: scaled(neural.MLPClassifier((128,), max_iter=400, random_state=0)),
        ),
    ]


def _digits(store: Store, quick: bool, progress: Progress | None) -> list[str]:
    datasets = _need("sklearn.datasets")
    selection = _need("sklearn.model_selection")
    x, y = datasets.load_digits(return_X_y=True)
    x_train, x_test, y_train, y_test = selection.train_test_split(
        x, y, test_size=0.5, random_state=0, stratify=y
    )
    image_ids = np.array([f"digit_{i:04d}" for i in range(len(y_test))])
    names = []
    models = _classifiers()
    if quick:
        models = [models[0], models[3], models[-1]]
    for week, (name, params, tags, make) in enumerate(models):
        model = make()
        model.fit(x_train, y_train)
        proba = model.predict_proba(x_test)
        classes = [str(c) for c in model.classes_]
        group = np.repeat(classes, len(y_test))
        labels = np.concatenate([np.where(y_test == int(c), 1, -1) for c in classes])
        run = f"digits/{name}"
        store.ingest(
            {
                "group_id": group,
                "item_id": np.tile(image_ids, len(classes)),
                "score": proba.T.reshape(-1),
                "label": labels,
            },
            task="classification",
            run=run,
            replace=True,
            params={**params, "test_images": len(y_test), "seed": 0},
            tags=tags,
            notes="scikit-learn digits, one-vs-rest scores of the held-out half",
            created_at=START + timedelta(weeks=week, hours=week),
            git_commit=None,
        )
        names.append(run)
        if progress is not None:
            progress("digits classifiers", week + 1, len(models))
    return names


# -- HPatches-style descriptors ------------------------------------------------------------------


def _hpatches(store: Store, quick: bool, progress: Progress | None) -> list[str]:
    from evalstore import demo_hpatches as hp

    sequences = hp.make_sequences(n_sequences=4 if quick else 8, seed=0, size=240 if quick else 320)
    names = []
    descriptors = hp.available_descriptors()
    for week, descriptor in enumerate(descriptors):
        tasks = hp.hpatches_tasks(sequences, descriptor, n_patches=40 if quick else 100, seed=0)
        matches, pairs = hp.keypoint_matches(
            sequences, descriptor, max_keypoints=250 if quick else 500
        )
        run = f"hpatches/{descriptor}"
        meta: dict[str, Any] = {
            "params": {"descriptor": descriptor, "sequences": len(sequences), "seed": 0},
            "tags": ["weakened"] if descriptor.endswith("_weak") else ["opencv"],
            "created_at": START + timedelta(weeks=week, days=2),
            "git_commit": None,
            "notes": "HPatches-style sequences from scikit-image photographs, OpenCV descriptors",
        }
        store.ingest(tasks["verification"], task="verification", run=run, replace=True, **meta)
        for task in ("matching", "retrieval"):
            groups = tasks.get(f"{task}_groups")
            store.ingest(
                tasks[task],
                task=task,
                run=run,
                append=True,
                groups=None if groups is None else pl.DataFrame(groups),
                **meta,
            )
        store.ingest(
            matches, task="keypoints", run=run, append=True, pairs=pl.DataFrame(pairs), **meta
        )
        names.append(run)
        if progress is not None:
            progress("hpatches descriptors", week + 1, len(descriptors))
    return names


def build(
    store: Store,
    *,
    out: Path | None = None,
    quick: bool = False,
    progress: Progress | None = None,
) -> DemoResult:
    """Build (or refresh) the demo runs in ``store``, compute their metrics and, with
    ``out``, write the dashboards there. ``quick`` makes a smaller demo with every task."""
    import time

    from evalstore.evaluate import evaluate

    started = time.perf_counter()
    result = DemoResult()
    result.runs += _digits(store, quick, progress)
    result.runs += _hpatches(store, quick, progress)
    evaluate(store, result.runs, by=("class",), progress=progress)
    hpatches = [r for r in result.runs if r.startswith("hpatches/")]
    evaluate(store, hpatches, by=("noise", "kind"), progress=progress)
    if out is not None:
        from evalstore.dashboards import write_dashboards

        result.dashboards = write_dashboards(store, out, progress=progress)
    result.seconds = time.perf_counter() - started
    return result
