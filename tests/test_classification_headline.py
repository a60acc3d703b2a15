"""A classification run's standard metrics and headline hold scikit-learn's AP (``ap``, its
mean ``map``) beside the VOC APs, and ``leaderboard -m map`` names that column: tried as a
user would, with scikit-learn's wine data and a logistic regression's ``predict_proba``,
one ranked list per class, through the CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from evalstore import Store
from evalstore.cli import app
from evalstore.metrics.registry import DEFAULTS, HEADLINE


def wine_rows(seed: int, c: float = 1.0) -> tuple[pl.DataFrame, np.ndarray, np.ndarray]:
    """A logistic regression on half of scikit-learn's wine data; its probabilities on the
    other half as one list per class (label +1 for the sample's class), the true classes
    and the probabilities."""
    from sklearn.datasets import load_wine
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x, y = load_wine(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.5, random_state=seed)
    model = make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=5000))
    proba = model.fit(x_train, y_train).predict_proba(x_test)
    n, k = proba.shape
    frame = pl.DataFrame(
        {
            "group_id": [f"class{c}" for c in range(k) for _ in range(n)],
            "item_id": [i for _ in range(k) for i in range(n)],
            "score": proba.T.ravel(),
            "label": [1 if y_test[i] == c else -1 for c in range(k) for i in range(n)],
        }
    )
    return frame, y_test, proba


def sklearn_map(y: np.ndarray, proba: np.ndarray) -> float:
    from sklearn.metrics import average_precision_score

    return float(np.mean([average_precision_score(y == c, proba[:, c]) for c in range(3)]))


@pytest.fixture(scope="module")
def wine_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, float]]:
    """Two configurations of two seeds each, ingested from Parquet files with the CLI, once
    per module; scikit-learn's mean AP of each run."""
    folder = tmp_path_factory.mktemp("wine")
    path = folder / "wine.duckdb"
    expected = {}
    for c in (0.01, 1.0):
        for seed in (0, 1):
            frame, y, proba = wine_rows(seed, c)
            data = folder / f"c{c}-{seed}.parquet"
            frame.write_parquet(data)
            run = f"wine/logreg-c{c}-seed{seed}"
            done = CliRunner().invoke(app, ["ingest", str(data), "--task", "classification",
                                            "--run", run, "-p", f"C={c}", "-p", f"seed={seed}",
                                            "--db", str(path)])  # fmt: skip
            assert done.exit_code == 0, done.output
            expected[run] = sklearn_map(y, proba)
    return path, expected


@pytest.fixture
def wine(db: Path, wine_store: tuple[Path, dict[str, float]]) -> dict[str, float]:
    """The store of :func:`wine_store` at the test's ``db`` (a copy: tests cache values)."""
    shutil.copyfile(wine_store[0], db)
    return wine_store[1]


def test_the_standard_metrics_and_headline_of_classification_hold_map() -> None:
    assert DEFAULTS["classification"] == ("ap", "ap_voc07", "ap_voc10")
    assert [m for m, _ in HEADLINE["classification"]] == ["ap", "ap_voc07", "ap_voc10"]


def test_eval_of_a_classification_run_gives_scikit_learns_map(
    cli: Any, wine: dict[str, float]
) -> None:
    result = cli("eval", "wine/logreg-c1.0-seed0", "--format", "json")
    assert result.exit_code == 0, result.output
    values = {r["metric"]: r["value"] for r in json.loads(result.stdout)}
    assert set(values) == {"map", "map_voc07", "map_voc10"}
    assert values["map"] == pytest.approx(wine["wine/logreg-c1.0-seed0"], rel=1e-12, abs=0)


def test_the_leaderboard_shows_map_and_takes_it_with_m(cli: Any, wine: dict[str, float]) -> None:
    default = cli("leaderboard", "--runs", "--format", "csv")
    assert default.exit_code == 0, default.output
    header = default.stdout.splitlines()[0].split(",")
    shown = [c for c in header if c.startswith("classification") and not c.endswith(" sd")]
    assert shown == ["classification map", "classification map_voc07", "classification map_voc10"]
    for name in ("map", "mAP", "ap"):
        result = cli("leaderboard", "--runs", "-m", name, "--format", "csv")
        assert result.exit_code == 0, result.output
        rows = list(pl.read_csv(result.stdout.encode()).iter_rows(named=True))
        assert {r["group"] for r in rows} == set(wine)
        for row in rows:
            assert set(row) == {"group", "n_runs", "classification map"}
            assert row["classification map"] == pytest.approx(wine[row["group"]], rel=1e-12)
        values = [r["classification map"] for r in rows]
        assert values == sorted(values, reverse=True)  # ranked by the one column, best first


def test_leaderboard_m_orders_the_columns_and_keeps_logged_values(
    cli: Any, db: Path, wine: dict[str, float]
) -> None:
    with Store(db) as store:
        store.log_metric("wine/logreg-c1.0-seed0", "val_acc", 0.9)
    result = cli("leaderboard", "-m", "map_voc10", "-m", "map", "-m", "val_acc", "-f", "csv")
    assert result.exit_code == 0, result.output
    frame = pl.read_csv(result.stdout.encode())
    assert [c for c in frame.columns if not c.endswith(" sd")] == [
        "group", "n_runs", "classification map_voc10", "classification map", "logged val_acc",
    ]  # fmt: skip
    assert frame["classification map_voc10"].is_sorted(descending=True)
    assert frame["n_runs"].to_list() == [2, 2]
    means = {
        g: np.mean([v for r, v in wine.items() if r.startswith(g)])
        for g in ("wine/logreg-c0.01", "wine/logreg-c1.0")
    }
    for row in frame.iter_rows(named=True):
        assert row["classification map"] == pytest.approx(means[row["group"]], rel=1e-12)
    only_logged = cli("leaderboard", "-m", "val_acc", "-f", "csv")
    assert only_logged.stdout.splitlines()[0].split(",")[2:8:2] == [
        "classification map", "classification map_voc07", "classification map_voc10",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("nope", "unknown metric 'nope'"),
        ("mapp", "did you mean 'map'"),
        ("pr_curve", "pr_curve is a curve, not a column"),
        ("coco_ap", "no values of coco_ap to group"),
    ],
)
def test_leaderboard_m_refuses_what_is_no_column(
    cli: Any, wine: dict[str, float], name: str, message: str
) -> None:
    result = cli("leaderboard", "-m", name)
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert message in result.stderr
