"""The list index (sql/lib/list_index.sql), written once per ingest: per list its counts
(``list_stats``) and per retrieved positive the point where it enters the ranking under
``grouped`` ties (``positive_ranks``). Scores never change after ingest, so metrics read
these instead of scanning and sorting every row again.

The points are computed with one NumPy sort of one key per row, in chunks of lists of bounded
size, for float32 and DOUBLE scores alike (DOUBLE scores took two SQL window sorts, which cost
about twice as much). The distinct scores per list (``n_scores``) are stored for float32
scores; DOUBLE scores leave them NULL, as before. tests/test_list_index.py and
tests/test_list_index_f64.py check that the NumPy way gives the rows of the SQL definition.
"""

from __future__ import annotations

import contextlib

import duckdb
import numpy as np
import pyarrow as pa

from evalstore.db import queries
from evalstore.db.schema import rows_sql

__all__ = ["CHUNK_ROWS", "index_lists", "positive_points", "rank_lists"]

CHUNK_ROWS = 1 << 20
"""The most retrieved, non-ignored rows ranked at once (a longer list is ranked alone): the
rows read and the keys take about 30 bytes a row (float32 scores), so ingest's peak memory
stays near DuckDB's own (1e7 rows in 10,000 lists: 307 MiB, 427 with chunks of 4 M rows, for
the same CPU); each chunk costs a query, which reads only its lists' row groups when the rows
came list by list."""


def index_lists(con: duckdb.DuckDBPyConnection, table: str, lo: int, hi: int) -> None:
    """Write the list index of the lists ``lo <= list_id < hi`` of row table ``table``, in the
    caller's transaction."""
    bounds = {"lo": lo, "hi": hi}
    _execute(con, rows_sql("store/insert_list_stats", table), bounds)
    counted = table.endswith("_f32")  # n_scores: stored for float32 scores alone
    chunks = queries.fetch_rows(con, "store/index_chunks", {**bounds, "rows": CHUNK_ROWS})
    select = rows_sql("store/index_rows", table)
    for first, stop in chunks:
        rows = con.sql(select, params=queries.bind(select, {"lo": first, "hi": stop}))
        got = rows.to_arrow_table()
        (list_id, tp, n), (lists, n_scores) = rank_lists(
            _values(got.column("list_id")),
            _values(got.column("score")),
            _values(got.column("label")) == 1,
        )
        del got
        _insert(
            con,
            "store/insert_positive_ranks_from",
            "_positive_ranks",
            _table(list_id=list_id, tp=tp, n=n),
        )
        if counted:
            _insert(
                con,
                "store/set_n_scores",
                "_list_scores",
                _table(list_id=lists, n_scores=n_scores),
            )


def _values(column: pa.ChunkedArray) -> np.ndarray:
    """The values of a fixed-width column without NULLs as a NumPy array, read from its data
    buffer: pyarrow's own ``to_numpy`` imports pandas (about 0.3 s)."""
    array = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if array.null_count:
        raise AssertionError(f"{array.null_count} NULLs in a column of index_rows")
    dtype = np.dtype(array.type.to_pandas_dtype())
    data = array.buffers()[1]
    if data is None:  # no rows
        return np.empty(0, dtype)
    return np.frombuffer(data, dtype, count=len(array), offset=array.offset * dtype.itemsize)


def _table(**columns: np.ndarray) -> pa.Table:
    """Arrow columns over the arrays' own memory: ``pa.table`` of NumPy arrays imports pandas."""
    return pa.table(
        {
            name: pa.Array.from_buffers(
                pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)]
            )
            for name, values in columns.items()
        }
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


def _keys(score: np.ndarray, list_id: np.ndarray, base: int | None) -> np.ndarray:
    """One key per row whose ascending order is the rows' list (``list_id - base``; ``base``
    None: one list), then their score from the highest, and which are equal exactly when
    both are (-0.0 counts as +0.0).

    A float32 score's key is its bits as an unsigned integer of the float's order (flip all
    bits of a negative, the sign bit of a positive), inverted; the list goes in the high 32
    bits. A float64 score of one list is keyed so in 64 bits; of several, the key is the
    complex number (list, -score), which NumPy sorts and compares by real part, then
    imaginary part.
    """
    if score.dtype != np.float32 and base is not None:
        key = np.empty(len(score), np.complex128)
        np.subtract(list_id, base, out=key.real, casting="unsafe")
        np.negative(score, out=key.imag)
        key.imag += 0.0  # -0.0 -> +0.0 (equal to it anyway)
        return key
    if score.dtype == np.float32:
        bits, ints, shift = np.uint32, np.int32, 31
    else:
        bits, ints, shift = np.uint64, np.int64, 63
    raw = (score + score.dtype.type(0.0)).view(bits)  # -0.0 -> +0.0
    flip = (raw.view(ints) >> shift).view(bits)
    flip |= bits(1 << shift)
    np.bitwise_xor(raw, flip, out=flip)
    np.invert(flip, out=flip)
    del raw
    if base is None:
        return flip
    listed: np.ndarray = np.subtract(list_id, base, dtype=np.int64).view(np.uint64)
    listed <<= np.uint64(32)
    listed |= flip
    return listed


def _starts(key: np.ndarray, size: int) -> np.ndarray:
    """Where each of ``size`` lists begins in the sorted ``key`` (:func:`_keys`)."""
    if key.dtype == np.complex128:
        first = np.empty(size, np.complex128)
        first.real = np.arange(size)
        first.imag = -np.inf  # below any score's key
    elif key.dtype == np.uint64 and size > 1:
        first = np.arange(size, dtype=np.uint64) << np.uint64(32)
    else:
        return np.zeros(1, np.int64)
    return np.searchsorted(key, first, "left")


def rank_lists(
    list_id: np.ndarray, score: np.ndarray, positive: np.ndarray
) -> tuple[Arrays, Arrays]:
    """The points of :func:`positive_points`, and ``(list_id, n_scores)``: the distinct
    scores of each list.

    Each row gets a key (:func:`_keys`) that sorts by list, then higher scores first. With
    the keys of all rows sorted and those of the positives sorted, ``n`` of a positive is the
    rows up to the last key equal to its own, less the rows of the lists before; ``tp`` the
    same among the positives. Beside the arrays given, it holds the keys (4 bytes a row for
    float32 scores of one list, else 8 or 16) and a few bytes a row.
    """
    if not len(list_id):
        empty = np.empty(0, np.int32)
        return (empty, empty, empty), (empty, np.empty(0, np.int64))
    if score.dtype not in (np.float32, np.float64):
        score = np.asarray(score, np.float64)
    base, top = int(list_id.min()), int(list_id.max())
    size = top - base + 1
    key = _keys(score, list_id, base if size > 1 else None)
    pos_key = np.sort(key[np.asarray(positive, bool)])
    key.sort()
    row_start = _starts(key, size)
    pos_start = _starts(pos_key, size)
    rows = np.diff(row_start, append=len(key))  # per list
    pos_list = np.repeat(np.arange(size), np.diff(pos_start, append=len(pos_key)))
    n = np.searchsorted(key, pos_key, "right") - row_start[pos_list]
    last = np.flatnonzero(np.append(pos_key[1:] != pos_key[:-1], True))  # of each equal run
    tp = np.repeat(last + 1, np.diff(last, prepend=-1)) - pos_start[pos_list]
    new = np.empty(len(key), bool)  # where a key differs from the one before
    new[0] = True
    np.not_equal(key[1:], key[:-1], out=new[1:])
    del key, pos_key
    present = np.flatnonzero(rows)
    n_scores = np.add.reduceat(new, row_start[present], dtype=np.int64)
    ids = (pos_list + base).astype(np.int32)
    points = (ids, tp.astype(np.int32), n.astype(np.int32))
    return points, ((present + base).astype(np.int32), n_scores)


def _execute(con: duckdb.DuckDBPyConnection, text: str, params: dict[str, int]) -> None:
    con.execute(text, queries.bind(text, params))
