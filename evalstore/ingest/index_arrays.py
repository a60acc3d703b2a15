"""What the list index (:mod:`evalstore.ingest.index`) and the per-rank index
(:mod:`evalstore.ingest.rank_index`) share: a rank of uint64 keys among the distinct ones, made
from a sort of values rather than an argsort or a search; and Arrow columns read as NumPy
arrays, and NumPy arrays handed over as Arrow columns, without pandas (which pyarrow's own
conversions import, about 0.3 s), and such a table inserted through a named query."""

from __future__ import annotations

import contextlib

import duckdb
import numpy as np
import pyarrow as pa

from evalstore.db import queries

__all__ = ["arrow_table", "column_values", "dense_rank", "fetch_columns", "insert_rows"]

BATCH_ROWS = 122_880
"""Rows per Arrow batch that :func:`fetch_columns` copies at a time (DuckDB's row group)."""


def dense_rank(key: np.ndarray) -> np.ndarray:
    """Each uint64 ``key``'s rank among the distinct keys (0: the least; below 2^32 for
    fewer than 2^32 keys).

    NumPy sorts uint64 values fast (SIMD) but argsorts them several times slower, and a
    complex128 key (list, score) slower still. So the order comes from a sort of values:
    each key's high bits with its position in the low ``b`` bits (``2^b`` > the keys),
    which sorts the keys by their high bits and gives each one's position; keys equal in
    their high bits but not in their low ones (doubles a few units in the last place apart)
    are then sorted within those runs alone, by their full key.
    """
    n = len(key)
    b = max(1, (n - 1).bit_length())
    low = np.uint64((1 << b) - 1)
    order = key & ~low
    order |= np.arange(n, dtype=np.uint64)
    order.sort()
    order &= low  # the positions, by high bits
    ranked = key[order]
    wrong = np.flatnonzero(ranked[1:] < ranked[:-1])
    if len(wrong):  # sort the runs of equal high bits that hold an inversion, by full key
        high = ranked >> np.uint64(b)
        runs = high[wrong]
        cover = np.bincount(np.searchsorted(high, runs, "left"), minlength=n + 1)
        cover -= np.bincount(np.searchsorted(high, runs, "right"), minlength=n + 1)
        inside = np.flatnonzero(np.cumsum(cover[:n]) > 0)
        fixed = inside[np.lexsort((ranked[inside], high[inside]))]
        del high, cover
        order[inside] = order[fixed]
        ranked[inside] = ranked[fixed]
    new = np.zeros(n, np.uint32)
    np.not_equal(ranked[1:], ranked[:-1], out=new[1:], casting="unsafe")
    del ranked
    np.cumsum(new, out=new)
    rank = np.empty(n, np.uint64)
    rank[order] = new
    return rank


def column_values(column: pa.ChunkedArray) -> np.ndarray:
    """The values of a fixed-width column without NULLs as a NumPy array, read from its data
    buffer."""
    array = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if array.null_count:
        raise AssertionError(f"{array.null_count} NULLs in a column an index reads")
    dtype = np.dtype(array.type.to_pandas_dtype())
    data = array.buffers()[1]
    if data is None:  # no rows
        return np.empty(0, dtype)
    return np.frombuffer(data, dtype, count=len(array), offset=array.offset * dtype.itemsize)


def fetch_columns(
    con: duckdb.DuckDBPyConnection,
    text: str,
    params: dict[str, int],
    rows: int,
    *,
    exact: bool = True,
) -> dict[str, np.ndarray | pa.ChunkedArray]:
    """The columns of query ``text``, which gives ``rows`` rows (``exact`` false: at most
    ``rows``): each integer or float column as a NumPy array without NULLs, made once and
    filled batch by batch (a whole Arrow table, then its chunks combined, holds every value
    twice: in memory first touched, which costs as much CPU as the copies), any other column
    as Arrow."""
    reader = con.sql(text, params=queries.bind(text, params)).to_arrow_reader(BATCH_ROWS)
    numeric = (pa.types.is_integer, pa.types.is_floating)
    fixed = {
        f.name: np.empty(rows, np.dtype(f.type.to_pandas_dtype()))
        for f in reader.schema
        if any(kind(f.type) for kind in numeric)
    }
    other: dict[str, list[pa.Array]] = {f.name: [] for f in reader.schema if f.name not in fixed}
    at = 0
    for batch in reader:
        size = batch.num_rows
        if at + size > rows:
            raise AssertionError(f"a query of {rows} rows gave more")
        for name, values in fixed.items():
            values[at : at + size] = column_values(pa.chunked_array([batch.column(name)]))
        for name, parts in other.items():
            parts.append(batch.column(name))
        at += size
    if at != rows:
        if exact:
            raise AssertionError(f"a query of {rows} rows gave {at}")
        fixed = {name: values[:at] for name, values in fixed.items()}
    chunked = {n: pa.chunked_array(p, type=reader.schema.field(n).type) for n, p in other.items()}
    return {**fixed, **chunked}


def arrow_table(**columns: np.ndarray) -> pa.Table:
    """Arrow columns over the arrays' own memory."""
    return pa.table(
        {
            name: pa.Array.from_buffers(
                pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)]
            )
            for name, values in columns.items()
        }
    )


def insert_rows(con: duckdb.DuckDBPyConnection, query: str, view: str, rows: pa.Table) -> None:
    """Run the named ``query``, which reads ``rows`` as the view ``view`` (nothing if no rows)."""
    if not rows.num_rows:
        return
    con.register(view, rows)
    try:
        queries.run(con, query)
    finally:
        with contextlib.suppress(duckdb.Error):
            con.unregister(view)
