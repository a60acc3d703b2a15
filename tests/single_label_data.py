"""Single-label classification runs for the tests: a score matrix (samples x classes) with
heavy ties, scores on the ece bin edges (k / 10, k / 4), a true class per sample, rows
labelled 0 (no candidate) and NULL scores, as the ranked-list rows evalstore ingests (one list
per class, in a shuffled list order) and read back with their list ids."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from evalstore import Store
from evalstore.metrics.registry import RankedLists


def rows_of(
    scores: np.ndarray,
    truth: np.ndarray,
    *,
    ignored: np.ndarray | None = None,
    class_order: np.ndarray | None = None,
    names: list[str] | None = None,
) -> dict[str, Any]:
    """The rows of a (samples x classes) score matrix, the classes' lists in ``class_order``
    (default: column order), class j named ``names[j]`` (default ``c<j>``); NaN scores are
    stored NULL (as -inf); ``ignored`` (samples x classes) rows are labelled 0."""
    n_s, n_c = scores.shape
    order = np.arange(n_c) if class_order is None else class_order
    names = names or [f"c{j}" for j in range(n_c)]
    cols = np.repeat(order, n_s)
    samples = np.tile(np.arange(n_s), n_c)
    label = np.where(truth[samples] == cols, 1, -1)
    if ignored is not None:
        label = np.where(ignored[samples, cols] & (label == -1), 0, label)
    return {
        "group_id": np.array([names[j] for j in cols]),
        "item_id": np.array([f"s{i}" for i in samples]),
        "score": np.where(np.isnan(scores), -np.inf, scores)[samples, cols],
        "label": label,
    }


@st.composite
def single_label_runs(draw: Any, probabilities: bool = False) -> dict[str, Any]:
    """A run's rows: 1 to 6 classes, 1 to 20 samples; with ``probabilities`` every score in
    [0, 1] and none NULL."""
    n_c, n_s = draw(st.integers(1, 6)), draw(st.integers(1, 20))
    steps = draw(st.sampled_from([2, 4, 10, 1000]))  # few distinct scores = heavy ties
    values = draw(st.lists(st.integers(0, steps), min_size=n_s * n_c, max_size=n_s * n_c))
    scores = np.array(values, dtype=np.float64).reshape(n_s, n_c) / steps
    if not probabilities:
        scores = scores * draw(st.sampled_from([1.0, 7.0, -3.0]))
        if draw(st.booleans()):
            scores[
                np.array(
                    draw(st.lists(st.booleans(), min_size=scores.size, max_size=scores.size))
                ).reshape(scores.shape)
            ] = np.nan
    truth = np.array(draw(st.lists(st.integers(0, n_c - 1), min_size=n_s, max_size=n_s)))
    ignored = None
    if draw(st.booleans()):
        flags = draw(st.lists(st.sampled_from([False, False, False, True]),
                              min_size=scores.size, max_size=scores.size))  # fmt: skip
        ignored = np.array(flags).reshape(scores.shape)
    order = np.array(draw(st.permutations(list(range(n_c)))))
    return rows_of(scores, truth, ignored=ignored, class_order=order)


def seeded_run(rng: np.random.Generator, probabilities: bool = False) -> dict[str, Any]:
    """A seeded run of 5 classes and 60 samples, scores rounded to tenths (ties, edges)."""
    scores = np.round(rng.dirichlet(np.ones(5), size=60), 1)
    if not probabilities:
        scores[rng.random(scores.shape) < 0.05] = np.nan
    return rows_of(scores, rng.integers(0, 5, 60), class_order=rng.permutation(5))


def ingest(store: Store, rows: dict[str, Any], run: str) -> int:
    return store.ingest(rows, task="classification", run=run, labels="pm1", git_commit=None).run_id


def read(store: Store, run_id: int) -> RankedLists:
    """The stored rows of a classification run as the twins read them, with list ids."""
    rows = store.con.sql(  # test-only read of stored rows
        "select group_id, item_id, score, label, seq, list_id from scores"
        " where run_id = $r and task = 'classification' order by seq",
        params={"r": run_id},
    ).pl()
    ids = np.empty(rows.height, dtype=object)
    ids[:] = rows["group_id"].to_list()
    return RankedLists(
        group=ids,
        scores=rows["score"].fill_null(-np.inf).to_numpy().astype(np.float64),
        labels=rows["label"].to_numpy().astype(np.int64),
        order=rows["seq"].to_numpy().astype(np.int64),
        items=np.array(rows["item_id"].to_list(), dtype=object),
        list_ids=rows["list_id"].to_numpy().astype(np.int64),
    )
