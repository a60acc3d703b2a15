"""nDCG under `grouped` ties read from the list index (sql/lib/dcg.sql: a list whose rows carry
no gain and whose ties ingest indexed, none or dense, is read from positive_ranks and
tied_ranks instead of its rows) gives the same bits as reading the rows, which is what it does
when list_stats does not count the list's distinct scores (n_scores NULL)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalstore import Store
from evalstore.db import queries
from evalstore.metrics.registry import METRICS

METRICS_READ = ("ndcg", "ndcg_at_k", "ndcg_exp", "ndcg_exp_at_k")


def _rows(seed: int, graded: bool) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    parts: list[dict[str, np.ndarray]] = []
    for g in range(10):
        n = int(rng.integers(1, 300))
        if g % 3 == 0:
            score = rng.permutation(n).astype(np.float32)  # no ties
        elif g % 3 == 1:
            score = rng.integers(0, max(1, n // 8), n).astype(np.float32)  # densely tied
        else:
            score = rng.standard_normal(n).astype(np.float32)
            score[: n // 4] = score[0]  # a few ties: read from the rows
        label = rng.choice(np.array([1, -1, 0]), n, p=[0.3, 0.6, 0.1])
        if g == 4:
            label[label == 1] = -1  # no positive
        score[rng.random(n) < 0.05] = -np.inf  # not retrieved
        part = {
            "group_id": np.full(n, f"q{g}"),
            "item_id": rng.permutation(10 * n)[:n].astype(np.int32),
            "score": score,
            "label": label.astype(np.int8),
        }
        if graded:
            part["gain"] = rng.integers(0, 4, n).astype(np.float64)
        parts.append(part)
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = Path(tmp_path_factory.mktemp("ndcg_index"))
    with Store(folder / "t.duckdb") as store:
        for run, seed, graded in (("plain", 3, False), ("other", 4, False), ("graded", 5, True)):
            pq.write_table(pa.table(_rows(seed, graded)), folder / f"{run}.parquet")
            store.ingest(folder / f"{run}.parquet", task="retrieval", run=run, git_commit=None)
        yield store


def _values(store: Store, metric: str, ties: str, k: int) -> dict[tuple[int, str], Any]:
    query = METRICS[metric].query_for(ties)
    runs = [r for (r,) in store.con.execute("select run_id from runs order by 1").fetchall()]
    params = {"runs": runs, "task": "retrieval", "ties": ties, "k": k}
    got = store.con.execute(query.text, queries.bind(query.text, params)).fetchall()
    return {(run, str(group)): value for run, group, value in got}


def test_the_index_gives_the_bits_of_the_rows(store: Store) -> None:
    kinds = store.con.execute(
        "select count(*) filter (where n_scores = n_ret and p_ret > 0), "
        "count(*) filter (where n_scores < n_ret and 2 * n_scores <= n_ret and p_ret > 0), "
        "count(*) filter (where 2 * n_scores > n_ret and n_scores < n_ret) from list_stats"
    ).fetchone()
    assert kinds is not None and min(kinds) > 0  # lists of each kind: untied, dense, a few ties
    cases = [
        (m, ties, k)
        for m in METRICS_READ
        for ties in ("grouped", "pessimistic")
        for k in (1, 7, 50)
    ]
    indexed = {case: _values(store, *case) for case in cases}
    store.con.execute("create temp table kept as select list_id, n_scores from list_stats")
    store.con.execute("update list_stats set n_scores = null")  # every list read from its rows
    try:
        for case in cases:
            rows = _values(store, *case)
            assert len(rows) == 30 and indexed[case] == rows, case
            assert sum(v is not None for v in rows.values()) >= 25
    finally:
        store.con.execute(
            "update list_stats set n_scores = kept.n_scores from kept "
            "where list_stats.list_id = kept.list_id"
        )
