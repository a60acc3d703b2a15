"""The view v_confusion (sql/schema/021_confusion.sql): a classification run's confusion
matrix, rows of (actual, predicted, n). Equal to scikit-learn's ``confusion_matrix`` of the
true classes and ``np.argmax`` over the scores, columns in the order the classes are first
met in the input, on generated runs through the real store; a hand-worked case with ties,
missing scores and samples without one positive; a store of schema 20 upgrades to it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import confusion_matrix, recall_score

from evalstore import Store
from evalstore.db import schema as schema_module


def confusion_rows(store: Store, run: str) -> list[tuple[str, str, int]]:
    """The view's rows of ``run`` (experiment/name), in the view's order."""
    return store.con.execute(
        "select actual, predicted, n from v_confusion where run = ?", [run]
    ).fetchall()


def as_matrix(rows: list[tuple[str, str, int]], classes: list[str]) -> np.ndarray:
    """The view's rows as a dense matrix over ``classes`` (rows actual, columns predicted)."""
    at = {c: i for i, c in enumerate(classes)}
    out = np.zeros((len(classes), len(classes)), dtype=np.int64)
    for actual, predicted, n in rows:
        out[at[actual], at[predicted]] = n
    return out


def frame_of(scores: np.ndarray, labels: np.ndarray, classes: list[str]) -> dict[str, Any]:
    """One list per class (column), one item per sample (row), sample by sample in input
    order: the classes are met in column order. NaN: the row is left out (the sample is not
    in that list); -inf: not retrieved."""
    rows = [
        (classes[c], i, scores[i, c], labels[i, c])
        for i in range(scores.shape[0])
        for c in range(scores.shape[1])
        if not np.isnan(scores[i, c])
    ]
    return {
        "group_id": np.array([r[0] for r in rows]),
        "item_id": np.array([r[1] for r in rows], dtype=np.int64),
        "score": np.array([r[2] for r in rows], dtype=np.float64),
        "label": np.array([r[3] for r in rows], dtype=np.int64),
    }


@st.composite
def classification_runs(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """Scores (samples x classes) from a few values (ties), some -inf (not retrieved) and
    some NaN (the sample absent from that class's list), and labels: one positive per sample
    for most, none or two for a few."""
    n = draw(st.integers(1, 40))
    k = draw(st.integers(2, 6))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    scores = rng.choice(np.array([0.0, 0.25, 0.5, 1.0, -np.inf]), size=(n, k),
                        p=[0.25, 0.25, 0.25, 0.2, 0.05])  # fmt: skip
    truth = rng.integers(0, k, n)
    labels = -np.ones((n, k), dtype=np.int64)
    labels[np.arange(n), truth] = 1
    kind = rng.random(n)
    labels[kind < 0.05] = -1  # no positive
    two = (kind > 0.95) & (k > 1)
    labels[two, (truth[two] + 1) % k] = 1  # two positives
    absent = (rng.random((n, k)) < 0.05) & (labels != 1)
    scores[absent] = np.nan
    scores[0, np.isnan(scores[0])] = 0.5  # the first sample meets every class, in order
    return scores, labels


def reference(scores: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """scikit-learn's confusion matrix of the samples with exactly one positive: their true
    class against np.argmax over the scores (a missing score -inf; equal scores to the
    first column)."""
    keep = (labels == 1).sum(axis=1) == 1
    filled = np.where(np.isnan(scores), -np.inf, scores)
    y_true = np.argmax(labels == 1, axis=1)[keep]
    y_pred = np.argmax(filled, axis=1)[keep]
    if not keep.any():  # scikit-learn takes no empty input: no sample, no count
        return np.zeros((k, k), dtype=np.int64)
    return confusion_matrix(y_true, y_pred, labels=list(range(k)))


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(run=classification_runs())
def test_equals_scikit_learns_confusion_matrix(store: Store, run: tuple[Any, Any]) -> None:
    scores, labels = run
    k = scores.shape[1]
    classes = [f"c{(7 * j) % 11}" for j in range(k)]  # not in text order: c0, c7, c3, ...
    store.ingest(frame_of(scores, labels, classes), task="classification", run="h/r",
                 replace=True)  # fmt: skip
    got = as_matrix(confusion_rows(store, "h/r"), classes)
    np.testing.assert_array_equal(got, reference(scores, labels, k))


def test_a_hand_worked_case_with_ties(store: Store) -> None:
    """Classes met in the input as b, a, c (so b's list is made first):

    s1  true a   b .5  a .5  c .1   tie of b and a: b (first met)
    s2  true a   b .1  a .9  c .2   a
    s3  true c   b -inf a -inf c -inf   nothing retrieved: b
    s4  true b   b .7  a .7  c .7   three-way tie: b
    s5  a and b positive          left out (two positives)
    s6  no positive               left out
    s7  true c   (no b row) a .8  c .3   a
    s8  true a   (no b row) a -inf  c -inf   absent is -inf, all tie: b (first of the run)
    """
    nan, inf = np.nan, np.inf
    scores = np.array(
        [[0.5, 0.5, 0.1], [0.1, 0.9, 0.2], [-inf, -inf, -inf], [0.7, 0.7, 0.7],
         [0.1, 0.2, 0.3], [0.3, 0.2, 0.1], [nan, 0.8, 0.3], [nan, -inf, -inf]]
    )  # fmt: skip
    labels = np.array(
        [[-1, 1, -1], [-1, 1, -1], [-1, -1, 1], [1, -1, -1],
         [1, 1, -1], [-1, -1, -1], [-1, -1, 1], [-1, 1, -1]]
    )  # fmt: skip
    store.ingest(frame_of(scores, labels, ["b", "a", "c"]), task="classification", run="h/t")
    rows = confusion_rows(store, "h/t")
    assert rows == [("b", "b", 1), ("a", "b", 2), ("a", "a", 1), ("c", "b", 1), ("c", "a", 1)]
    np.testing.assert_array_equal(as_matrix(rows, ["b", "a", "c"]), reference(scores, labels, 3))


def test_integer_class_ids_read_directly_tie_to_the_lowest_id(store: Store, tmp_path: Path) -> None:
    """A Parquet file with integer class ids is read by DuckDB directly, which numbers the
    lists in id order: a tie goes to the lowest id, wherever it stands in the file."""
    path = tmp_path / "ints.parquet"
    pl.DataFrame(
        {"group_id": [9, 2, 5, 9, 2, 5], "item_id": [1, 1, 1, 2, 2, 2],
         "score": [0.4, 0.4, 0.1, 0.9, 0.2, 0.3], "label": [1, -1, -1, -1, 1, -1]}
    ).write_parquet(path)  # fmt: skip
    assert store.ingest(path, task="classification", run="h/ints").method == "direct"
    assert confusion_rows(store, "h/ints") == [("2", "9", 1), ("9", "2", 1)]


def test_only_classification_runs_and_every_run_apart(store: Store, cli: Any) -> None:
    scores = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
    labels = np.array([[1, -1], [1, -1], [-1, 1]])
    data = frame_of(scores, labels, ["x", "y"])
    store.ingest(data, task="classification", run="e/one")
    store.ingest(data, task="retrieval", run="e/retrieval")
    store.ingest({**data, "score": -data["score"]}, task="classification", run="e/two")
    runs = store.con.execute("select distinct run_id, run from v_confusion order by 1").fetchall()
    assert runs == [(1, "e/one"), (3, "e/two")]
    assert confusion_rows(store, "e/one") == [("x", "x", 1), ("x", "y", 1), ("y", "x", 1)]
    assert confusion_rows(store, "e/two") == [("x", "x", 1), ("x", "y", 1), ("y", "y", 1)]
    store.close()
    shown = cli("sql", "select run, actual, predicted, n from v_confusion where run = 'e/two'",
                "--format", "json")  # fmt: skip
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout) == [
        {"run": "e/two", "actual": a, "predicted": p, "n": n}
        for a, p, n in [("x", "x", 1), ("x", "y", 1), ("y", "y", 1)]
    ]


@pytest.mark.no_store
def test_a_store_of_schema_20_gains_the_view(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = schema_module.migrations()
    monkeypatch.setattr(schema_module, "migrations", lambda: [f for f in files if f[0] <= 20])
    scores = np.array([[0.9, 0.1], [0.2, 0.8]])
    labels = np.array([[-1, 1], [-1, 1]])
    with Store(db) as store:
        assert store.schema_version() == 20
        store.ingest(frame_of(scores, labels, ["x", "y"]), task="classification", run="u/r")
        views = store.con.execute("select view_name from duckdb_views() where not internal")
        assert "v_confusion" not in {v for (v,) in views.fetchall()}
    monkeypatch.setattr(schema_module, "migrations", lambda: files)
    with Store(db) as store:
        assert store.upgraded_from == 20
        assert store.schema_version() == schema_module.latest_schema_version() >= 21
        assert confusion_rows(store, "u/r") == [("y", "x", 1), ("y", "y", 1)]


def test_the_docs_queries_of_the_view_run(store: Store, cli: Any) -> None:
    """docs/sql.md's two queries over v_confusion, on a run named as there: the matrix, and
    each class's recall (the diagonal over the row), as scikit-learn's recall_score."""
    page = (Path(__file__).parent.parent / "docs" / "sql.md").read_text()
    block = page.split("**`v_confusion`**", 1)[1].split("```sql", 1)[1].split("```", 1)[0]
    matrix_query, recall_query = [q.strip() for q in block.split(";") if q.strip()]
    scores = np.array([[0.9, 0.1, 0.0], [0.2, 0.8, 0.0], [0.6, 0.4, 0.0], [0.1, 0.2, 0.7]])
    labels = np.array([[1, -1, -1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]])
    store.ingest(frame_of(scores, labels, ["a", "b", "c"]), task="classification",
                 run="wine/logreg")  # fmt: skip
    store.close()
    shown = cli("sql", matrix_query, "--format", "json")
    assert shown.exit_code == 0, shown.output
    assert [tuple(r.values()) for r in json.loads(shown.stdout)] == [
        ("a", "a", 1), ("a", "b", 1), ("b", "a", 1), ("c", "c", 1),
    ]  # fmt: skip
    shown = cli("sql", recall_query, "--format", "json")
    assert shown.exit_code == 0, shown.output
    recall = {r["actual"]: r["recall"] for r in json.loads(shown.stdout)}
    expected = recall_score([0, 0, 1, 2], np.argmax(scores, axis=1), average=None)
    assert [recall[c] for c in "abc"] == pytest.approx(list(expected), abs=0)
