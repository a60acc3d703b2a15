"""The list index (sql/lib/list_index.sql), written once per ingest: per list its counts
(``list_stats``) and per retrieved positive the point where it enters the ranking under
``grouped`` ties (``positive_ranks``). Scores never change after ingest, so metrics read
these instead of scanning and sorting every row again.

Float32 scores (the common case) are ranked with NumPy sorts of one integer key per row, in
chunks of lists of bounded size; DOUBLE scores take the SQL way (two window
sorts). tests/test_list_index.py checks that both give the rows of the SQL definition.
"""

from __future__ import annotations

import contextlib

import duckdb
import numpy as np
import pyarrow as pa

from evalstore.db import queries
from evalstore.db.schema import rows_sql

__all__ = ["CHUNK_ROWS", "index_lists", "positive_points", "rank_lists"]

CHUNK_ROWS = 1 << 24
"""The most retrieved, non-ignored rows ranked at once (a longer list is ranked alone): the
sort holds about 40 bytes per row."""


def index_lists(con: duckdb.DuckDBPyConnection, table: str, lo: int, hi: int) -> None:
    """Write the list index of the lists ``lo <= list_id < hi`` of row table ``table``, in the
    caller's transaction."""
    bounds = {"lo": lo, "hi": hi}
    _execute(con, rows_sql("store/insert_list_stats", table), bounds)
    if not table.endswith("_f32"):
        _execute(con, rows_sql("store/insert_positive_ranks", table), bounds)
        return
    chunks = queries.fetch_rows(con, "store/index_chunks", {**bounds, "rows": CHUNK_ROWS})
    select = rows_sql("store/index_rows", table)
    for first, stop in chunks:
        rows = con.sql(select, params=queries.bind(select, {"lo": first, "hi": stop}))
        got = rows.to_arrow_table()
        (list_id, tp, n), (lists, n_scores) = rank_lists(
            got.column("list_id").to_numpy(),
            got.column("score").to_numpy(),
            got.column("label").to_numpy() == 1,
        )
        del got
        _insert(
            con,
            "store/insert_positive_ranks_from",
            "_positive_ranks",
            pa.table({"list_id": list_id, "tp": tp, "n": n}),
        )
        _insert(
            con,
            "store/set_n_scores",
            "_list_scores",
            pa.table({"list_id": lists, "n_scores": n_scores}),
        )


def _insert(con: duckdb.DuckDBPyConnection, query: str, view: str, rows: pa.Table) -> None:
    if not rows.num_rows:
        return
    con.register(view, rows)
    try:
        queries.run(con, query)
    finally:
        with contextlib.suppress(duckdb.Error):
            con.unregister(view)


Arrays = tuple[np.ndarray, ...]


def positive_points(list_id: np.ndarray, score: np.ndarray, positive: np.ndarray) -> Arrays:
    """``(list_id, tp, n)`` of each positive among retrieved, non-ignored rows: ``tp``
    positives and ``n`` rows of its list score at least as high (the end of its tie group)."""
    return rank_lists(list_id, score, positive)[0]


def rank_lists(
    list_id: np.ndarray, score: np.ndarray, positive: np.ndarray
) -> tuple[Arrays, Arrays]:
    """The points of :func:`positive_points`, and ``(list_id, n_scores)``: the distinct
    scores of each list.

    Each row gets an unsigned key that sorts higher scores first (the float32's bits, -0.0 as
    +0.0), with its list (relative to the least one) in the high 32 bits when there are
    several. Sorting the keys of all rows and of the positives, ``n`` and ``tp`` of a
    positive are the keys at most its own, in its list, in each sorted array.
    """
    if not len(list_id):
        empty = np.empty(0, np.int32)
        return (empty, empty, empty), (empty, empty)
    base = int(list_id.min())
    bits = (np.asarray(score, np.float32) + np.float32(0.0)).view(np.uint32)  # -0.0 -> +0.0
    # the float's order as an unsigned key (flip all bits of a negative, the sign bit of a
    # positive), inverted so that higher scores sort first
    flip = (bits.view(np.int32) >> 31).view(np.uint32) | np.uint32(0x80000000)
    np.bitwise_xor(bits, flip, out=flip)
    np.invert(flip, out=flip)
    del bits
    key: np.ndarray = flip
    if int(list_id.max()) > base:
        key = np.subtract(list_id, base, dtype=np.int64).view(np.uint64)
        key <<= np.uint64(32)
        key |= flip
        del flip
    pos_key = np.sort(key[np.asarray(positive, bool)])
    key.sort()
    firsts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))  # of each score
    if key.dtype == np.uint64:
        rel = pos_key >> np.uint64(32)
        first = rel << np.uint64(32)  # the least key of the positive's list
        n = np.searchsorted(key, pos_key, "right") - np.searchsorted(key, first, "left")
        tp = np.searchsorted(pos_key, pos_key, "right") - np.searchsorted(pos_key, first, "left")
        ids = (rel.astype(np.int64) + base).astype(np.int32)
        of_first = key[firsts] >> np.uint64(32)  # sorted: the list of each distinct score
        starts = np.flatnonzero(np.concatenate(([True], of_first[1:] != of_first[:-1])))
        n_scores = np.diff(np.append(starts, len(of_first)))
        lists = (of_first[starts].astype(np.int64) + base).astype(np.int32)
    else:
        n = np.searchsorted(key, pos_key, "right")
        tp = np.searchsorted(pos_key, pos_key, "right")
        ids = np.full(len(pos_key), base, np.int32)
        lists, n_scores = np.array([base], np.int32), np.array([len(firsts)])
    points = (ids, tp.astype(np.int32), n.astype(np.int32))
    return points, (lists, n_scores.astype(np.int64))


def _execute(con: duckdb.DuckDBPyConnection, text: str, params: dict[str, int]) -> None:
    con.execute(text, queries.bind(text, params))
