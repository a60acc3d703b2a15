"""A real training loop: scikit-learn's SGDClassifier trained epoch by epoch (partial_fit) on
the digits in a run opened by ``evalstore.init``, logging the training loss (``run.log``) and
the validation scores of every sample (``run.log_lists``) at each epoch; ``evalstore history
--by step`` then gives what scikit-learn computed in the loop."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from sklearn.datasets import load_digits
from sklearn.linear_model import SGDClassifier
from sklearn.metrics import average_precision_score, log_loss
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import evalstore

EPOCHS = 5


def classification_frame(proba: np.ndarray, truth: np.ndarray, classes: np.ndarray) -> pl.DataFrame:
    """One list per class, one item per validation sample, label +1 where it is the class."""
    n, k = proba.shape
    return pl.DataFrame(
        {
            "group_id": np.repeat(classes, n),
            "item_id": np.tile(np.arange(n), k),
            "score": proba.T.reshape(-1),
            "label": np.where(np.repeat(classes, n) == np.tile(truth, k), 1, -1),
        }
    )


def test_history_by_step_gives_what_the_loop_computed(db: Path, cli: Any) -> None:
    x, y = load_digits(return_X_y=True)
    x_train, x_val, y_train, y_val = train_test_split(x, y, test_size=0.3, random_state=0)
    scaler = StandardScaler().fit(x_train)
    x_train, x_val = scaler.transform(x_train), scaler.transform(x_val)
    classes = np.unique(y)
    model = SGDClassifier(loss="log_loss", alpha=1e-3, random_state=0)
    rng = np.random.default_rng(0)
    losses, maps = [], []
    with evalstore.init("digits/sgd", params={"alpha": 1e-3}, db=db, git_commit=None) as run:
        for epoch in range(EPOCHS):
            for batch in np.array_split(rng.permutation(len(y_train)), 10):
                model.partial_fit(x_train[batch], y_train[batch], classes=classes)
            loss = log_loss(y_train, model.predict_proba(x_train), labels=classes)
            run.log({"loss": loss}, step=epoch)
            proba = model.predict_proba(x_val)
            run.log_lists(classification_frame(proba, y_val, classes), task="classification",
                          step=epoch)  # fmt: skip
            losses.append(loss)
            maps.append(np.mean([average_precision_score(y_val == c, proba[:, i])
                                 for i, c in enumerate(classes)]))  # fmt: skip
    assert losses[-1] < losses[0]  # it learns: the values below are of a real training

    out = cli("history", "-m", "loss", "--by", "step", "--run", "digits/sgd", "--format", "json")
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)
    assert [r["step"] for r in rows] == list(range(EPOCHS))
    assert [r["value"] for r in rows] == pytest.approx(losses, abs=1e-12, rel=0)

    out = cli("history", "-m", "map", "--by", "step", "--run", "digits/sgd", "--format", "json")
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)
    assert [r["step"] for r in rows] == list(range(EPOCHS))
    assert [r["value"] for r in rows] == pytest.approx(maps, abs=1e-12, rel=0)
    assert [r["best_so_far"] for r in rows] == pytest.approx(np.maximum.accumulate(maps), abs=1e-12)

    out = cli("eval", "digits/sgd", "-m", "map", "--format", "json")  # the run: its last epoch
    (row,) = json.loads(out.stdout)
    assert (row["step"], row["value"]) == (EPOCHS - 1, pytest.approx(maps[-1], abs=1e-12, rel=0))
