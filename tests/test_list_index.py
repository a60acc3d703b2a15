"""The list index (sql/lib/list_index.sql): counts per list and the point of each retrieved
positive, stored once by ingest and import, read by `runs`, `show` and average precision.
The NumPy way (float32 scores) and the SQL way give the rows of the SQL definition, and the
index follows its run through ingest, import, rm and the schema 12 upgrade."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstore import Store, evaluate
from evalstore.core.ranking import ap
from evalstore.db import schema as schema_module
from evalstore.db.queries import load
from evalstore.ingest.index import positive_points, rank_lists
from evalstore.metrics.registry import METRICS
from evalstore.scale.export import export_runs
from evalstore.scale.importer import import_runs

STATS = "list_id, n_rows, n_pos_labels, n_neg, n_ret, p_ret"
INDEX = f"select {STATS} from list_stats order by all", "select * from positive_ranks order by all"
VIEWS = (
    f"select {STATS} from ({load('store/list_stats_view').text.rstrip(';')}) order by all",
    f"select * from ({load('store/positive_ranks_view').text.rstrip(';')}) order by all",
)


def _sql_points(list_id: np.ndarray, score: np.ndarray, positive: np.ndarray) -> list[tuple]:
    con = duckdb.connect()
    frame = pl.DataFrame(
        {"list_id": list_id, "score": score, "label": np.where(positive, 1, -1).astype(np.int8)}
    )
    con.register("score_items", frame.to_arrow())
    return con.execute(VIEWS[1]).fetchall()


@settings(max_examples=examples(150), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 3),
            st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 2.5, 1e30, -1e-30, 3.4e38]),
            st.booleans(),
        ),
        min_size=0,
        max_size=60,
    ),
    st.sampled_from([0, 7, 2**31 - 10]),
)
def test_numpy_points_are_the_sql_definition(rows: list[tuple], base: int) -> None:
    """Ties (and -0.0 against +0.0), several lists and list ids up to INT32 give the rows of
    the SQL windows."""
    list_id = np.array([base + r[0] for r in rows], dtype=np.int32)
    score = np.array([r[1] for r in rows], dtype=np.float32)
    positive = np.array([r[2] for r in rows], dtype=bool)
    ids, tp, n = positive_points(list_id, score, positive)
    got = sorted(zip(ids.tolist(), tp.tolist(), n.tolist(), strict=True))
    assert got == _sql_points(list_id, score, positive)


def test_numpy_points_on_distinct_scores() -> None:
    rng = np.random.default_rng(3)
    list_id = rng.integers(0, 50, 20_000).astype(np.int32)
    score = rng.standard_normal(20_000).astype(np.float32)
    positive = rng.random(20_000) < 0.2
    ids, tp, n = positive_points(list_id, score, positive)
    assert sorted(zip(ids.tolist(), tp.tolist(), n.tolist(), strict=True)) == _sql_points(
        list_id, score, positive
    )


def _frame(rng: np.random.Generator, dtype: type, lists: int = 5, rows: int = 40) -> pl.DataFrame:
    score = np.round(rng.standard_normal(lists * rows), 1).astype(dtype)  # ties
    label = rng.choice([1, -1, -1, 0], lists * rows).astype(np.int8)
    score[rng.random(lists * rows) < 0.1] = -np.inf  # not retrieved
    return pl.DataFrame(
        {
            "group_id": np.repeat(np.arange(lists), rows),
            "item_id": np.tile(np.arange(rows), lists),
            "score": score,
            "label": label,
        }
    )


def _scores_counted(store: Store, counted: bool) -> bool:
    """n_scores is the distinct scores of each list's retrieved, non-ignored items (float32:
    counted at ingest), else NULL."""
    got = store.con.execute(
        "select s.list_id, s.n_scores, count(distinct i.score) filter "
        "(where i.label <> 0 and i.score is not null) "
        "from list_stats s join score_items i using (list_id) group by all order by 1"
    ).fetchall()
    return all((n == want) if counted else n is None for _, n, want in got)


def _index(store: Store) -> tuple[list, list]:
    return tuple(store.con.execute(q).fetchall() for q in INDEX)  # type: ignore[return-value]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ingest_import_and_rm_keep_the_index(tmp_path: Path, dtype: type) -> None:
    rng = np.random.default_rng(0)
    with Store(tmp_path / "a.duckdb") as store:
        for name in ("a", "b"):
            path = tmp_path / f"{name}.parquet"
            _frame(rng, dtype).write_parquet(path)
            store.ingest(path, task="retrieval", run=f"x/{name}")
        assert _index(store) == tuple(store.con.execute(q).fetchall() for q in VIEWS)
        assert len(_index(store)[0]) == 10
        assert _scores_counted(store, dtype is np.float32)
        export_runs(store, tmp_path / "out")
        store.remove("x/a")
        assert _index(store) == tuple(store.con.execute(q).fetchall() for q in VIEWS)
        assert len(_index(store)[0]) == 5
    with Store(tmp_path / "b.duckdb") as other:
        import_runs(other, tmp_path / "out")
        assert _index(other) == tuple(other.con.execute(q).fetchall() for q in VIEWS)
        assert len(_index(other)[0]) == 10


def test_schema_12_indexes_stored_lists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store written at schema 11 opens with its lists indexed and the same AP."""
    files = schema_module.migrations()
    monkeypatch.setattr(schema_module, "migrations", lambda: [f for f in files if f[0] <= 11])
    db = tmp_path / "old.duckdb"
    scores, labels = [3.0, 2.0, 2.0, 1.0, 0.5], [1, -1, 1, 1, -1]
    with Store(db) as store:
        assert store.schema_version() == 11
        store.con.execute(
            "insert into runs (run_id, experiment, name, created_at) values (1, 'x', 'a', now())"
        )
        store.con.execute(
            "insert into groups (run_id, task, group_id, list_id) values (1, 'retrieval', 'q', 0)"
        )
        for i, (s, lab) in enumerate(zip(scores, labels, strict=True)):
            store.con.execute(
                "insert into list_rows_int_f32 values (0, ?, ?, ?, ?)", [i, s, lab, i]
            )
    monkeypatch.setattr(schema_module, "migrations", lambda: files)
    with Store(db) as store:
        assert store.schema_version() == schema_module.latest_schema_version()
        stats = store.con.execute("select * from list_stats").fetchall()
        assert stats == [(0, 5, 3, 2, 5, 3, None)]  # distinct scores not counted
        assert store.con.execute("select * from positive_ranks order by n").fetchall() == [
            (0, 1, 1),
            (0, 2, 3),
            (0, 3, 4),
        ]
        got = evaluate(store, ["x/a"], metrics=["ap"])  # one list: its mean AP is its AP
        assert got["value"][0] == pytest.approx(ap(np.array(scores), np.array(labels)), rel=1e-15)


@pytest.mark.parametrize("name", ["store/list_runs", "store/get_run"])
def test_runs_and_show_count_rows_without_scanning_them(tmp_path: Path, name: str) -> None:
    """`runs` and `show` read the stored counts: their plans touch no row table."""
    rng = np.random.default_rng(1)
    with Store(tmp_path / "a.duckdb") as store:
        _frame(rng, np.float32).write_parquet(tmp_path / "a.parquet")
        run_id = store.ingest(tmp_path / "a.parquet", task="retrieval", run="x/a").run_id
        text = load(name).text.rstrip(";")
        params = {"run_id": run_id, "experiment": None, "tag": None, "limit": None, "commit": None}
        params["ids"] = None
        params["step_runs"] = False
        params["sort"] = "created_at"
        used = {k: v for k, v in params.items() if f"${k}" in text}
        plan = "\n".join(r[1] for r in store.con.execute(f"explain {text}", used).fetchall())
        assert "list_stats" in plan
        assert "list_rows" not in plan
        assert store.runs()["n_rows"].to_list() == [200]


def test_numpy_counts_distinct_scores_per_list() -> None:
    rng = np.random.default_rng(5)
    for lists in (1, 7):
        list_id = (rng.integers(0, lists, 5_000) + 11).astype(np.int32)
        score = np.round(rng.standard_normal(5_000), 2).astype(np.float32)
        score[:50] = -0.0
        score[50:100] = 0.0
        positive = rng.random(5_000) < 0.3
        _, (ids, n_scores) = rank_lists(list_id, score, positive)
        want = {int(i): len(set((score[list_id == i] + np.float32(0)).tolist())) for i in ids}
        assert dict(zip(ids.tolist(), n_scores.tolist(), strict=True)) == want


@pytest.mark.parametrize("ties", ["input", "optimistic", "pessimistic"])
def test_lists_without_ties_read_the_stored_points_under_every_policy(
    tmp_path: Path, ties: str
) -> None:
    """A list of distinct scores is ranked alike by every tie policy: its AP comes from the
    stored points and equals the NumPy core's under that policy, beside lists with ties."""
    rng = np.random.default_rng(2)
    frame = _frame(rng, np.float32)
    distinct = rng.permutation(200).astype(np.float32) / 7  # list 0: no ties
    frame = frame.with_columns(
        pl.when(pl.col("group_id") == 0)
        .then(pl.Series(distinct))
        .otherwise(pl.col("score"))
        .alias("score")
    )
    frame.write_parquet(tmp_path / "a.parquet")
    with Store(tmp_path / "a.duckdb") as store:
        run_id = store.ingest(tmp_path / "a.parquet", task="retrieval", run="x/a").run_id
        free = store.con.execute("select count(*) from list_stats where n_scores = n_ret")
        assert free.fetchone() == (1,)
        text = METRICS["ap"].query_for(ties).text
        got = dict(
            (g, v)
            for _, g, v in store.con.execute(
                text, {"runs": [run_id], "task": "retrieval", "ties": ties}
            ).fetchall()
        )
    for gid, part in frame.group_by("group_id"):
        scores = part["score"].to_numpy().astype(np.float64)
        labels = part["label"].to_numpy()
        keep = np.isfinite(scores)
        n_pos = int((labels == 1).sum())
        want = ap(scores[keep], labels[keep], n_positives=n_pos, ties=ties)
        assert got[str(gid[0])] == pytest.approx(want, rel=1e-12, abs=1e-15)
