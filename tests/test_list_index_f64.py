"""The list index of DOUBLE scores, now ranked with NumPy as float32 scores are (issue 32):
the points equal the SQL definition's (sql/lib/list_index.sql, the windows that ranked them
before) on one list and on several, with ties, -0.0 against +0.0, doubles that no float32
holds and list ids up to INT32; and an ingest stores the rows of the SQL views."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstore import Store
from evalstore.db.queries import load
from evalstore.ingest.index import positive_points, rank_lists

POINTS = f"select * from ({load('store/positive_ranks_view').text.rstrip(';')}) order by all"
STATS = "list_id, n_rows, n_pos_labels, n_neg, n_ret, p_ret, n_scores"
DOUBLES = [0.0, -0.0, 1.0, -1.0, 0.1, 0.1 + 2**-55, 1e300, -1e-300, 5e-324, 1 / 3, 2.5]


def sql_points(list_id: np.ndarray, score: np.ndarray, positive: np.ndarray) -> list[tuple]:
    con = duckdb.connect()
    frame = pl.DataFrame(
        {"list_id": list_id, "score": score, "label": np.where(positive, 1, -1).astype(np.int8)}
    )
    con.register("score_items", frame.to_arrow())
    return con.execute(POINTS).fetchall()


def numpy_points(list_id: np.ndarray, score: np.ndarray, positive: np.ndarray) -> list[tuple]:
    ids, tp, n = positive_points(list_id, score, positive)
    return sorted(zip(ids.tolist(), tp.tolist(), n.tolist(), strict=True))


@settings(max_examples=examples(150), deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.sampled_from(DOUBLES), st.booleans()),
        min_size=0,
        max_size=60,
    ),
    st.sampled_from([0, 7, 2**31 - 10]),
)
def test_float64_points_are_the_sql_definition(rows: list[tuple], base: int) -> None:
    list_id = np.array([base + r[0] for r in rows], dtype=np.int32)
    score = np.array([r[1] for r in rows], dtype=np.float64)
    positive = np.array([r[2] for r in rows], dtype=bool)
    assert numpy_points(list_id, score, positive) == sql_points(list_id, score, positive)


@pytest.mark.parametrize("lists", [1, 40])
def test_float64_points_on_close_doubles(lists: int) -> None:
    """Doubles one unit in the last place apart are distinct scores (a float32 key would tie
    them)."""
    rng = np.random.default_rng(11)
    size = 20_000
    list_id = rng.integers(0, lists, size).astype(np.int32) + 3
    score = np.round(rng.standard_normal(size), 3)
    score[::3] = np.nextafter(score[::3], np.inf)
    positive = rng.random(size) < 0.2
    assert np.unique(score.astype(np.float32)).size < np.unique(score).size
    assert numpy_points(list_id, score, positive) == sql_points(list_id, score, positive)
    _, (ids, n_scores) = rank_lists(list_id, score, positive)
    want = {int(i): len(set((score[list_id == i] + 0.0).tolist())) for i in ids}
    assert dict(zip(ids.tolist(), n_scores.tolist(), strict=True)) == want


@pytest.mark.parametrize("groups", [1, 6])
def test_an_ingest_of_doubles_stores_the_rows_of_the_sql_views(tmp_path: Path, groups: int) -> None:
    rng = np.random.default_rng(groups)
    size = 300 * groups
    score = np.round(rng.standard_normal(size), 2) + rng.choice([0.0, 1e-12], size)
    score[rng.random(size) < 0.1] = -np.inf  # not retrieved
    frame = pl.DataFrame(
        {
            "group_id": np.repeat(np.arange(groups), 300),
            "item_id": np.tile(np.arange(300), groups),
            "score": score,
            "label": rng.choice([1, -1, -1, 0], size).astype(np.int8),
        }
    )
    path = tmp_path / "d.parquet"
    frame.write_parquet(path)
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(path, task="retrieval", run="x/a", git_commit=None)
        views = f"select {STATS} from ({load('store/list_stats_view').text.rstrip(';')})"
        stats = store.con.execute(f"select {STATS} from list_stats order by all").fetchall()
        assert stats == store.con.execute(f"{views} order by all").fetchall()
        assert [row[-1] for row in stats] == [None] * groups  # n_scores: NULL, as before
        points = store.con.execute("select * from positive_ranks order by all").fetchall()
        assert points == store.con.execute(POINTS).fetchall()
        assert len(points) > 0
