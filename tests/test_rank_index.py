"""The per-rank index (tied_ranks, sql/lib/tied_ranks.sql): per retrieved positive of a
densely tied list (list_stats: n_scores < n_ret and 2 * n_scores <= n_ret), the rank of the
list's k-th positive under each per-rank tie policy. The NumPy way
(evalstore/ingest/rank_index.py: key sorts, and the lexsort it falls back to) gives the rows
of the SQL definition (store/tied_ranks_view: row_number windows by the policies' keys), and
the index follows its run through ingest, the staging merge, import, rm and the schema 19
upgrade, with ap under every policy equal to the NumPy core's: of indexed lists, of lists
with a few ties (not indexed: ap_ranked sorts their tie groups) and of lists without ties."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstore import Store
from evalstore.core.points import docid_order
from evalstore.core.ranking import per_list
from evalstore.db import schema as schema_module
from evalstore.db.queries import bind, load
from evalstore.ingest import rank_index
from evalstore.ingest.rank_index import docid_keys, tied_points
from evalstore.metrics.registry import METRICS
from evalstore.scale.export import export_runs
from evalstore.scale.importer import import_runs

VIEW = f"select * from ({load('store/tied_ranks_view').text.rstrip(';')}) order by all"
STORED = "select list_id, k, n_optimistic, n_pessimistic, n_input, n_docid from tied_ranks"
POLICIES = ("optimistic", "pessimistic", "input", "docid")


def _dense(list_id: np.ndarray, score: np.ndarray) -> dict[int, tuple[int, int]]:
    """(n_ret, n_scores) of each list of the retrieved rows given, as list_stats holds them."""
    return {
        i: (int(np.sum(list_id == i)), len(set((score[list_id == i] + 0.0).tolist())))
        for i in set(list_id.tolist())
    }


def _indexed(stats: dict[int, tuple[int, int]]) -> list[int]:
    """The rule, in Python: fewer distinct scores than rows, and at most half as many."""
    return sorted(i for i, (n, d) in stats.items() if d < n and 2 * d <= n)


def _view(list_id, score, label, seq, item_id) -> list[tuple]:  # type: ignore[no-untyped-def]
    con = duckdb.connect()
    scores = pa.table(
        {"list_id": list_id, "score": score, "label": label, "seq": seq, "item_id": item_id}
    )
    con.register("scores", scores)
    stats = _dense(list_id, score)
    con.register(
        "list_stats",
        pa.table(
            {
                "list_id": pa.array(list(stats), pa.int32()),
                "n_ret": pa.array([n for n, _ in stats.values()], pa.int64()),
                "n_scores": pa.array([d for _, d in stats.values()], pa.int64()),
            }
        ),
    )
    return con.execute(VIEW).fetchall()


def _numpy(list_id, score, label, seq, items) -> list[tuple]:  # type: ignore[no-untyped-def]
    """tied_points of the densely tied lists, as index_tied_lists gives it their rows."""
    tied = _indexed(_dense(list_id, score))
    keep = np.isin(list_id, tied)
    if isinstance(items, np.ndarray):
        ids = items[keep]
    else:
        ids = pa.chunked_array([pa.array(np.asarray(items, object)[keep], pa.string())])
    cols = tied_points(list_id[keep], score[keep], label[keep] == 1, seq[keep], ids)
    return sorted(zip(*(c.tolist() for c in cols), strict=True))


ROW = st.tuples(
    st.integers(0, 3),  # list
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 2.5, 1e30, -1e-30]),
    st.booleans(),  # positive
    st.integers(-120, 120),  # item id (repeats within a list happen)
)


@settings(max_examples=examples(150), deadline=None)
@given(
    st.lists(ROW, min_size=0, max_size=60),
    st.sampled_from([0, 7, 2**31 - 10]),
    st.sampled_from([np.float32, np.float64]),
    st.booleans(),  # text ids
    st.sampled_from([64, 12]),  # the key bits (12: every fallback)
    st.sampled_from([4096, 0]),  # groups sorted alone (0: the docid keys hold the group)
    st.randoms(use_true_random=False),
)
def test_numpy_ranks_are_the_sql_definition(
    rows: list[tuple], base: int, dtype: type, text: bool, bits: int, alone: int, rnd: object
) -> None:
    """Ties (-0.0 as +0.0), several lists, list ids up to INT32, repeated item ids, seq in
    any order, integer and text ids: the rows of the SQL windows, by keys or by lexsort."""
    list_id = np.array([base + r[0] for r in rows], dtype=np.int32)
    score = np.array([r[1] for r in rows], dtype=dtype)
    label = np.array([1 if r[2] else -1 for r in rows], dtype=np.int8)
    seq = np.arange(len(rows), dtype=np.int32) * 3
    rnd.shuffle(seq)  # type: ignore[attr-defined]
    ids = np.array([r[3] for r in rows], dtype=np.int32)
    item_text = [f"d\u00e9{i}" if i % 3 else str(i) for i in ids.tolist()]
    items = item_text if text else ids
    want = _view(list_id, score, label, seq, item_text if text else [str(i) for i in ids.tolist()])
    old = rank_index.KEY_BITS, rank_index.SORTED_ALONE
    rank_index.KEY_BITS, rank_index.SORTED_ALONE = bits, alone
    try:
        got = _numpy(list_id, score, label, seq, items)
    finally:
        rank_index.KEY_BITS, rank_index.SORTED_ALONE = old
    assert got == want


def test_integer_docid_keys_follow_the_text_order() -> None:
    """Integer ids keyed from their digits sort as docid_order sorts their text."""
    rng = np.random.default_rng(3)
    ids = np.concatenate(
        [
            rng.integers(-(2**31), 2**31, 3_000),
            rng.integers(-1_000, 1_000, 3_000),
            [0, -1, 1, 9, 10, 99, 100, -(2**31), 2**31 - 1, -10, -9],
        ]
    ).astype(np.int32)
    keys, bits = docid_keys(ids)
    assert int(keys.max()) < 1 << bits
    order = docid_order(ids)  # rank of each id in decreasing text order, ties by position
    by_key = np.lexsort((np.arange(len(ids)), keys))
    assert np.array_equal(np.argsort(order), by_key)


def _parquet(path: Path, rng: np.random.Generator, dtype: type, text: bool) -> dict:
    """Six lists: q2 without ties, q4 with a few (distinct scores over half its rows: not
    indexed), q3 densely tied without a positive, q0, q1, q5 densely tied (indexed)."""
    parts = []
    for g in range(6):
        n = int(rng.integers(50, 300))
        score = rng.integers(0, int(rng.integers(2, 30)), n).astype(dtype)
        if g == 2:
            score = rng.permutation(n).astype(dtype)  # no ties
        if g == 4:  # a few ties, some of them between positives and negatives
            score = (rng.permutation(n) // 1.5).astype(dtype)
        label = rng.choice(np.array([1, -1, 0], np.int8), n, p=[0.3, 0.6, 0.1])
        if g == 3:
            label[label == 1] = -1  # tied, no positive
        ids = rng.permutation(30 * n)[:n] - 40
        parts.append(
            {
                "group_id": np.full(n, f"q{g}"),
                "item_id": np.array([f"d{i}" for i in ids]) if text else ids.astype(np.int32),
                "score": score,
                "label": label,
            }
        )
    rows = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    pq.write_table(pa.table(rows), path)
    return rows


def _check_ap(store: Store, run: str, rows: dict) -> None:
    """ap of each list under every per-rank policy, as the metric SQL gives it, equals the
    NumPy core's."""
    (run_id,) = store.con.execute(
        "select run_id from runs where experiment || '/' || name = ?", [run]
    ).fetchone()
    groups, codes = np.unique(rows["group_id"], return_inverse=True)
    score = rows["score"].astype(np.float64)
    for ties in POLICIES:
        query = METRICS["ap"].query_for(ties).text
        params = {"runs": [run_id], "task": "retrieval", "ties": ties}
        got = dict((g, v) for _, g, v in store.con.execute(query, bind(query, params)).fetchall())
        order = docid_order(rows["item_id"]) if ties == "docid" else None
        _, want = per_list("ap", codes, score, rows["label"], ties=ties, order=order)
        assert len(got) == len(groups)
        for g, w in zip(groups.tolist(), want.tolist(), strict=True):
            if np.isnan(w):  # no positive
                assert got[g] is None, (ties, g)
            else:
                assert got[g] == pytest.approx(w, rel=1e-12, abs=1e-15), (ties, g)


@pytest.mark.parametrize(
    ("dtype", "text"), [(np.float32, False), (np.float32, True), (np.float64, True)]
)
def test_ingest_merge_import_and_rm_keep_the_index(tmp_path: Path, dtype: type, text: bool) -> None:
    """float32 scores: the densely tied lists are indexed (q0, q1, q5: with positives), the
    others not; DOUBLE scores: n_scores is not counted, so no list is (ap sorts tie groups)."""
    rng = np.random.default_rng(0)
    per_run = 3 if dtype == np.float32 else 0
    with Store(tmp_path / "a.duckdb") as store:
        given = {}
        for name in ("a", "b"):
            path = tmp_path / f"{name}.parquet"
            given[name] = _parquet(path, rng, dtype, text)
            store.ingest(path, task="retrieval", run=f"x/{name}")
        stored = store.con.execute(f"{STORED} order by all").fetchall()
        assert stored == store.con.execute(VIEW).fetchall()
        assert len({r[0] for r in stored}) == 2 * per_run
        _check_ap(store, "x/b", given["b"])
        export_runs(store, tmp_path / "out")
        store.remove("x/a")
        assert (
            store.con.execute(f"{STORED} order by all").fetchall()
            == store.con.execute(VIEW).fetchall()
        )
        assert len({r[0] for r in store.con.execute(STORED).fetchall()}) == per_run
    with Store(tmp_path / "b.duckdb") as other:
        import_runs(other, tmp_path / "out")
        assert (
            other.con.execute(f"{STORED} order by all").fetchall()
            == other.con.execute(VIEW).fetchall()
        )
        _check_ap(other, "x/a", given["a"])


def test_schema_19_indexes_stored_lists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store written at schema 18 opens with its tied lists indexed, the same ap."""
    files = schema_module.migrations()
    monkeypatch.setattr(schema_module, "migrations", lambda: [f for f in files if f[0] <= 18])
    db = tmp_path / "old.duckdb"
    rng = np.random.default_rng(4)
    rows = _parquet(tmp_path / "a.parquet", rng, np.float32, False)
    with Store(db) as store:
        assert store.schema_version() == 18
        con = store.con
        con.execute(
            "insert into runs (run_id, experiment, name, created_at) values (1, 'x', 'a', now())"
        )
        groups = sorted(set(rows["group_id"].tolist()))
        for i, g in enumerate(groups):
            con.execute(
                "insert into groups (run_id, task, group_id, list_id) "
                "values (1, 'retrieval', ?, ?)",
                [g, i],
            )
        table = pa.table(
            {
                "list_id": np.searchsorted(groups, rows["group_id"]).astype(np.int32),
                "item": rows["item_id"],
                "score": rows["score"],
                "label": rows["label"],
                "seq": np.arange(len(rows["label"]), dtype=np.int32),
            }
        )
        con.register("_rows", table)
        con.execute("insert into list_rows_int_f32 select *, null from _rows")
        for view in ("list_stats", "positive_ranks"):
            con.execute(f"insert into {view} {load(f'store/{view}_view').text}")
        # n_scores, as schema 18's ingest stored it for float32 scores
        con.execute(
            "update list_stats set n_scores = d.n from (select list_id, count(distinct score) "
            "as n from list_rows_int_f32 where label <> 0 and score is not null group by all) "
            "d where d.list_id = list_stats.list_id"
        )
    monkeypatch.setattr(schema_module, "migrations", lambda: files)
    with Store(db) as store:
        assert store.schema_version() == schema_module.latest_schema_version()
        stored = store.con.execute(f"{STORED} order by all").fetchall()
        assert stored and stored == store.con.execute(VIEW).fetchall()
        _check_ap(store, "x/a", rows)


def test_only_densely_tied_lists_are_indexed(tmp_path: Path) -> None:
    """One list of continuous scores with chance ties (distinct scores over half its rows)
    gets no index row and one densely tied list does; ap of both under every policy equals
    the NumPy core's (the first from a sort of its tie groups, the second from tied_ranks)."""
    rng = np.random.default_rng(7)
    n = 4_000
    light = np.round(rng.standard_normal(n), 3).astype(np.float32)  # ~1,700 ties of ~4,000
    dense = np.round(rng.standard_normal(n), 1).astype(np.float32)  # ~60 distinct
    rows = {
        "group_id": np.repeat(np.array(["light", "dense"]), n),
        "item_id": rng.permutation(4 * n)[: 2 * n].astype(np.int32),
        "score": np.concatenate([light, dense]),
        "label": rng.choice(np.array([1, -1], np.int8), 2 * n, p=[0.3, 0.7]),
    }
    distinct = {g: len(np.unique(rows["score"][rows["group_id"] == g])) for g in ("light", "dense")}
    assert n / 2 < distinct["light"] < n and 2 * distinct["dense"] <= n
    pq.write_table(pa.table(rows), tmp_path / "a.parquet")
    with Store(tmp_path / "a.duckdb") as store:
        store.ingest(tmp_path / "a.parquet", task="retrieval", run="x/a")
        con = store.con
        got = con.execute(
            "select g.group_id, s.n_scores, s.n_ret, count(t.list_id) from groups g "
            "join list_stats s on s.list_id = g.list_id "
            "left join tied_ranks t on t.list_id = g.list_id group by all order by 1"
        ).fetchall()
        p_dense = int(np.sum((rows["group_id"] == "dense") & (rows["label"] == 1)))
        assert got == [("dense", distinct["dense"], n, p_dense), ("light", distinct["light"], n, 0)]
        assert con.execute(f"{STORED} order by all").fetchall() == con.execute(VIEW).fetchall()
        _check_ap(store, "x/a", rows)


def test_the_rule_at_its_boundary(tmp_path: Path) -> None:
    """8 retrieved rows with 4 distinct scores are indexed, with 5 not (ingest, the migration's
    SQL and ap_ranked apply one rule: 2 * n_scores <= n_ret); ap as the NumPy core's."""
    score = {"four": [3, 3, 2, 2, 1, 1, 0, 0], "five": [4, 3, 3, 2, 2, 1, 1, 0]}
    label = np.array([-1, 1, 1, -1, -1, 1, 1, -1] * 2, np.int8)
    rows = {
        "group_id": np.repeat(np.array(["five", "four"]), 8),
        "item_id": np.arange(16, dtype=np.int32)[::-1].copy(),
        "score": np.array(score["five"] + score["four"], np.float32),
        "label": label,
    }
    pq.write_table(pa.table(rows), tmp_path / "a.parquet")
    with Store(tmp_path / "a.duckdb") as store:
        store.ingest(tmp_path / "a.parquet", task="retrieval", run="x/a")
        got = store.con.execute(
            "select g.group_id, count(t.list_id) from groups g "
            "left join tied_ranks t on t.list_id = g.list_id group by all order by 1"
        ).fetchall()
        assert got == [("five", 0), ("four", 4)]
        assert (
            store.con.execute(VIEW).fetchall()
            == store.con.execute(f"{STORED} order by all").fetchall()
        )
        _check_ap(store, "x/a", rows)
