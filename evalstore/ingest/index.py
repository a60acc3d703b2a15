"""The list index (sql/lib/list_index.sql), written once per ingest: per list its counts
(``list_stats``) and per retrieved positive the point where it enters the ranking under
``grouped`` ties (``positive_ranks``). Scores never change after ingest, so metrics read
these instead of scanning and sorting every row again.

The points are computed with one NumPy sort of one key per row, in chunks of lists of bounded
size, for float32 and DOUBLE scores alike (DOUBLE scores took two SQL window sorts, which cost
about twice as much; then a sort of complex keys, about three times a float32's). The
distinct scores per list (``n_scores``) are stored for float32 scores; DOUBLE scores leave
them NULL, as before. tests/test_list_index.py and
tests/test_list_index_f64.py check that the NumPy way gives the rows of the SQL definition.
"""

from __future__ import annotations

import duckdb
import numpy as np

from evalstore.db import queries
from evalstore.db.schema import rows_sql
from evalstore.ingest.index_arrays import arrow_table, dense_rank, fetch_columns, insert_rows
from evalstore.ingest.rank_index import index_tied_lists

__all__ = ["CHUNK_ROWS", "index_lists", "positive_points", "rank_lists"]

CHUNK_ROWS = 1 << 20
"""The most retrieved, non-ignored rows ranked at once (a longer list is ranked alone): the
rows read and the keys take about 30 bytes a row (float32 scores), so ingest's peak memory
stays near DuckDB's own (1e7 rows in 10,000 lists: 307 MiB, 427 with chunks of 4 M rows, for
the same CPU); each chunk costs a query, which reads only its lists' row groups when the rows
came list by list."""


def index_lists(
    con: duckdb.DuckDBPyConnection, table: str, lo: int, hi: int, rows: int | None = None
) -> None:
    """Write the list index of the lists ``lo <= list_id < hi`` of row table ``table``, in the
    caller's transaction. ``rows``: the rows of those lists, when the caller knows them (at
    most CHUNK_ROWS: one chunk, without the query that cuts them)."""
    bounds = {"lo": lo, "hi": hi}
    _execute(con, rows_sql("store/insert_list_stats", table), bounds)
    counted = table.endswith("_f32")  # n_scores: stored for float32 scores alone
    exact = rows is None or rows > CHUNK_ROWS
    chunks = (
        queries.fetch_rows(con, "store/index_chunks", {**bounds, "rows": CHUNK_ROWS})
        if exact
        else [(lo, hi, rows)]  # (a bound on the retrieved, non-ignored rows: at most these)
    )
    select = rows_sql("store/index_rows", table)
    for first, stop, size in chunks:
        got = fetch_columns(con, select, {"lo": first, "hi": stop}, int(size), exact=exact)
        rows_list = np.asarray(got["list_id"])
        (list_id, tp, n), (lists, n_scores) = rank_lists(
            rows_list, np.asarray(got["score"]), np.asarray(got["label"]) == 1
        )
        del got
        insert_rows(
            con,
            "store/insert_positive_ranks_from",
            "_positive_ranks",
            arrow_table(list_id=list_id, tp=tp, n=n),
        )
        if counted:
            insert_rows(
                con,
                "store/set_n_scores",
                "_list_scores",
                arrow_table(list_id=lists, n_scores=n_scores),
            )
            if _densely_tied(rows_list, first, lists, n_scores):  # (else no tied_ranks rows)
                index_tied_lists(con, table, first, stop)  # tied_ranks, after n_scores
        # DOUBLE scores: n_scores NULL, no list is indexed (index_tied_lists would find none)
        del rows_list


def _densely_tied(
    rows_list: np.ndarray, first: int, lists: np.ndarray, n_scores: np.ndarray
) -> bool:
    """Whether a list of the chunk is indexed by :func:`index_tied_lists`: the rule of
    ``store/indexed_lists`` (fewer distinct scores than retrieved, non-ignored rows, and at
    most half as many) on the rows ``rows_list`` (their list ids, from ``first``) and the
    ``n_scores`` of the ``lists`` just stored, without the query."""
    if not len(lists):
        return False
    n_ret = np.bincount(rows_list - first, minlength=int(lists.max()) - first + 1)[lists - first]
    return bool(np.any((n_scores < n_ret) & (2 * n_scores <= n_ret)))


Arrays = tuple[np.ndarray, ...]

_STEP = 1 << 20  # rows per step of a keyed pass


def positive_points(list_id: np.ndarray, score: np.ndarray, positive: np.ndarray) -> Arrays:
    """``(list_id, tp, n)`` of each positive among retrieved, non-ignored rows: ``tp``
    positives and ``n`` rows of its list score at least as high (the end of its tie group)."""
    return rank_lists(list_id, score, positive)[0]


def _keys(score: np.ndarray, list_id: np.ndarray, base: int | None) -> tuple[np.ndarray, int]:
    """One key per row whose ascending order is the rows' list (``list_id - base``; ``base``
    None: one list), then their score from the highest, and which are equal exactly when
    both are (-0.0 counts as +0.0); and the bit where the list starts in the key.

    A score's key is its bits as an unsigned integer of the float's order (flip all bits of
    a negative, the sign bit of a positive), inverted. Of one list, that is the key. Of
    several, the list goes in the high bits: above a float32's 32; above a float64's key
    less its low bits when no two distinct doubles given differ only there (the list takes
    as many bits as the lists need), else above its rank among the distinct doubles
    (:func:`~evalstore.ingest.index_arrays.dense_rank`), which fewer than 2^32 rows keep below
    2^32.
    """
    if score.dtype == np.float32:
        bits, ints, shift = np.uint32, np.int32, 31
    else:
        bits, ints, shift = np.uint64, np.int64, 63
    flip = np.empty(len(score), bits)
    for lo in range(0, len(score), _STEP):  # in steps: temporaries of bounded memory
        raw = (score[lo : lo + _STEP] + score.dtype.type(0.0)).view(bits)  # -0.0 -> +0.0
        part = (raw.view(ints) >> shift).view(bits)
        part |= bits(1 << shift)
        np.bitwise_xor(raw, part, out=flip[lo : lo + _STEP])
    at = 32
    if score.dtype != np.float32 and base is not None:
        drop = np.uint64((int(list_id.max()) - base).bit_length())
        known = np.sort(flip)
        if np.any((known[1:] != known[:-1]) & ((known[1:] >> drop) == (known[:-1] >> drop))):
            flip = dense_rank(flip)  # two doubles differ in the bits the list would take
        else:
            flip >>= drop
            at = 64 - int(drop)
        del known
        np.subtract(np.uint64((1 << at) - 1), flip, out=flip)  # the inverse of at bits
    else:
        np.invert(flip, out=flip)
    if base is None:
        return flip, 0
    listed: np.ndarray = np.subtract(list_id, base, dtype=np.int64).view(np.uint64)
    listed <<= np.uint64(at)
    listed |= flip
    return listed, at


def _starts(key: np.ndarray, size: int, at: int) -> np.ndarray:
    """Where each of ``size`` lists begins in the sorted ``key`` (:func:`_keys`, the list
    from bit ``at`` on)."""
    if size == 1:
        return np.zeros(1, np.int64)
    return np.searchsorted(key, np.arange(size, dtype=np.uint64) << np.uint64(at), "left")


def rank_lists(
    list_id: np.ndarray, score: np.ndarray, positive: np.ndarray
) -> tuple[Arrays, Arrays]:
    """The points of :func:`positive_points`, and ``(list_id, n_scores)``: the distinct
    scores of each list.

    Each row gets a key (:func:`_keys`) that sorts by list, then higher scores first. With
    the keys of all rows sorted and those of the positives sorted, ``n`` of a positive is the
    rows up to the last key equal to its own, less the rows of the lists before (found among
    the distinct keys when they are at most half the rows, densely tied, else among all); ``tp``
    the same among the positives. Beside the arrays given, it holds the keys (4 bytes a row for
    float32 scores of one list, else 8) and a few bytes a row (about 30 while the float64
    scores of several lists are ranked).
    """
    if not len(list_id):
        empty = np.empty(0, np.int32)
        return (empty, empty, empty), (empty, np.empty(0, np.int64))
    if score.dtype not in (np.float32, np.float64):
        score = np.asarray(score, np.float64)
    base, top = int(list_id.min()), int(list_id.max())
    size = top - base + 1
    key, at = _keys(score, list_id, base if size > 1 else None)
    pos_key = key[np.asarray(positive, bool)]
    pos_key.sort()
    key.sort()
    row_start = _starts(key, size, at)
    pos_start = _starts(pos_key, size, at)
    rows = np.diff(row_start, append=len(key))  # per list
    new = np.empty(len(key), bool)  # where a key differs from the one before
    new[0] = True
    np.not_equal(key[1:], key[:-1], out=new[1:])
    present = np.flatnonzero(rows)
    if size == 1:  # reduceat would first make an int64 copy of every row's flag
        n_scores = np.array([np.count_nonzero(new)], np.int64)
    else:  # a chunk of several lists: at most CHUNK_ROWS rows
        n_scores = np.add.reduceat(new, row_start[present], dtype=np.int64)
    last = np.flatnonzero(np.append(pos_key[1:] != pos_key[:-1], len(pos_key) > 0))  # of a run
    runs = np.diff(last, prepend=-1)  # the positives of each run
    if 2 * np.count_nonzero(new) <= len(key):  # densely tied: search the distinct keys
        heads = np.flatnonzero(new)  # where each distinct key starts; it ends where the next does
        del new
        ends = np.append(heads[1:], len(key))[np.searchsorted(key[heads], pos_key[last])]
        del key, pos_key, heads
        n = np.repeat(ends.astype(np.int32), runs)  # int32 points: as stored, half the memory
    else:
        del new
        n = np.searchsorted(key, pos_key, "right").astype(np.int32)
        del key, pos_key
    tp = np.repeat((last + 1).astype(np.int32), runs)
    del last, runs
    if size > 1:  # less the rows and positives of the lists before, in the chunk
        ids = np.repeat(np.arange(size, dtype=np.int32), np.diff(pos_start, append=len(tp)))
        tp -= pos_start.astype(np.int32)[ids]
        n -= row_start.astype(np.int32)[ids]
        ids += np.int32(base)
    else:
        ids = np.full(len(tp), base, np.int32)
    return (ids, tp, n), ((present + base).astype(np.int32), n_scores)


def _execute(con: duckdb.DuckDBPyConnection, text: str, params: dict[str, int]) -> None:
    con.execute(text, queries.bind(text, params))
