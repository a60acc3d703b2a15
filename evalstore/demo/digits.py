"""The demo's ``digits`` experiment: multi-label classification, PASCAL VOC style.

Real classifiers (logistic regression at three regularisations, naive Bayes, k-NN, two MLPs)
trained on scikit-learn's handwritten digits; one-vs-rest scores on the held-out half make one
ranked list per class, evaluated with scikit-learn's AP and VOC 2007 and 2010 AP and their
means.
:func:`ingest_runs` records each classifier configuration with :data:`SEEDS` seeds, a week
(and an hour) apart, its seeds an hour apart: the seed draws a 90% subsample of the training
half and is the model's ``random_state`` where it has one, while every run scores the same
held-out images, so runs stay paired item by item.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from evalstore.errors import EvalstoreError

if TYPE_CHECKING:
    from evalstore.db.connection import Progress
    from evalstore.store.facade import Store

__all__ = ["SEEDS", "TRAIN_FRACTION", "ingest_runs"]

#: Seeds per configuration, in both the quick and the full demo.
SEEDS = (0, 1, 2)
#: The share of the training half each seed draws (stratified by digit).
TRAIN_FRACTION = 0.9


def _need(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise EvalstoreError(
            f"the demo needs {module.split('.')[0]}: pip install 'evalstore[demo]'"
        ) from None


def _classifiers() -> list[tuple[str, dict[str, Any], list[str], Callable[[int], Any]]]:
    """(name, params, tags, make): ``make(seed)`` builds an untrained model."""
    linear = _need("sklearn.linear_model")
    neighbors = _need("sklearn.neighbors")
    bayes = _need("sklearn.naive_bayes")
    neural = _need("sklearn.neural_network")
    pipeline = _need("sklearn.pipeline")
    prep = _need("sklearn.preprocessing")

    def scaled(model: Any) -> Any:
        return pipeline.make_pipeline(prep.StandardScaler(), model)

    return [
        ("naive-bayes", {"model": "gaussian_nb"}, ["baseline"], lambda seed: bayes.GaussianNB()),
        (
            "logreg-c0.001",
            {"model": "logistic_regression", "C": 0.001},
            ["linear"],
            lambda seed: scaled(
                linear.LogisticRegression(C=0.001, max_iter=1000, random_state=seed)
            ),
        ),
        (
            "logreg-c0.1",
            {"model": "logistic_regression", "C": 0.1},
            ["linear"],
            lambda seed: scaled(linear.LogisticRegression(C=0.1, max_iter=1000, random_state=seed)),
        ),
        (
            "knn-5",
            {"model": "knn", "k": 5},
            ["nonparametric"],
            lambda seed: neighbors.KNeighborsClassifier(n_neighbors=5),
        ),
        (
            "logreg-c1",
            {"model": "logistic_regression", "C": 1.0},
            ["linear"],
            lambda seed: scaled(linear.LogisticRegression(C=1.0, max_iter=2000, random_state=seed)),
        ),
        (
            "mlp-32",
            {"model": "mlp", "hidden": 32},
            ["neural"],
            lambda seed: scaled(neural.MLPClassifier((32,), max_iter=400, random_state=seed)),
        ),
        (
            "mlp-128",
            {"model": "mlp", "hidden": 128},
            ["neural"],
            lambda seed: scaled(neural.MLPClassifier((128,), max_iter=400, random_state=seed)),
        ),
    ]


def ingest_runs(
    store: Store, *, start: datetime, quick: bool, progress: Progress | None
) -> list[str]:
    """Train the classifiers and ingest one ``digits/<name>-seed<seed>`` run per configuration
    and seed, the first at ``start``; ``quick`` keeps 3 of the 7 configurations (with every
    seed). Returns the run names."""
    datasets = _need("sklearn.datasets")
    selection = _need("sklearn.model_selection")
    threads = _need("threadpoolctl")
    x, y = datasets.load_digits(return_X_y=True)
    x_train, x_test, y_train, y_test = selection.train_test_split(
        x, y, test_size=0.5, random_state=0, stratify=y
    )
    image_ids = np.array([f"digit_{i:04d}" for i in range(len(y_test))])
    names = []
    models = _classifiers()
    if quick:
        models = [models[0], models[3], models[-1]]
    total = len(models) * len(SEEDS)
    for week, (name, params, tags, make) in enumerate(models):
        for seed in SEEDS:
            x_seed, _, y_seed, _ = selection.train_test_split(
                x_train, y_train, train_size=TRAIN_FRACTION, random_state=seed, stratify=y_train
            )
            model = make(seed)
            # one BLAS thread: on these small matrices more threads only add overhead
            with threads.threadpool_limits(limits=1):
                model.fit(x_seed, y_seed)
                proba = model.predict_proba(x_test)
            classes = [str(c) for c in model.classes_]
            group = np.repeat(classes, len(y_test))
            labels = np.concatenate([np.where(y_test == int(c), 1, -1) for c in classes])
            run = f"digits/{name}-seed{seed}"
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
                params={
                    **params,
                    "train_fraction": TRAIN_FRACTION,
                    "test_images": len(y_test),
                    "seed": seed,
                },
                tags=tags,
                notes="scikit-learn digits, one-vs-rest scores of the held-out half; the seed "
                f"draws {TRAIN_FRACTION:.0%} of the training half",
                created_at=start + timedelta(weeks=week, hours=week + seed),
                git_commit=None,
            )
            names.append(run)
            if progress is not None:
                progress("digits classifiers", len(names), total)
    return names
