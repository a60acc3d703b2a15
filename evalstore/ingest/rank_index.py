"""The per-rank index (``tied_ranks``, sql/lib/tied_ranks.sql), written at ingest beside the
list index (:mod:`evalstore.ingest.index`) for the densely tied lists (at most half as many
distinct scores as retrieved, non-ignored rows, by list_stats): per list, the rank of its k-th
retrieved positive under each per-rank tie policy (``optimistic``, ``pessimistic``,
``input``, ``docid``). ap under those policies then reads the ranks instead of sorting every
row at each evaluation. Any other list gets no row and costs nothing here: one without tied
scores is ranked by every policy as ``grouped`` does (``positive_ranks``), and ap sorts the
few tie groups of the others (metrics/ap_ranked.sql).

The ranks come from NumPy sorts of one 64-bit key per row: the row's tie group (its list and
score, in ranking order) in the high bits, the policy's tie-break in the middle (``seq``
under input; under docid the item id's rank in decreasing byte order of its text), and its
label in the lowest bit, so the sorted keys alone give the positives' places. optimistic and
pessimistic follow from the tie groups: a group of ``n`` items and ``p`` positives starting
after ``a`` items puts its positives at ``a + 1 .. a + p`` or ``a + n - p + 1 .. a + n``.
When the bits do not fit, or two rows of a tie group share an item id, a ``lexsort`` gives
the same order. tests/test_rank_index.py checks the rows against the SQL definition
(store/tied_ranks_view) and the NumPy core.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import duckdb
import numpy as np
import pyarrow as pa

from evalstore.db import queries
from evalstore.db.schema import rows_sql
from evalstore.ingest.index_arrays import (
    arrow_table,
    column_values,
    dense_rank,
    fetch_columns,
    insert_rows,
)

__all__ = ["docid_keys", "index_tied_lists", "tied_points"]

Arrays = tuple[np.ndarray, ...]

KEY_BITS = 64
"""The bits of a sort key (tests set fewer to take the lexsort that a key too wide takes)."""

_CHUNK = 1 << 20  # rows per step of the chunked operations (bounded temporaries)
_LITTLE = np.little_endian

SORTED_ALONE = 4096
"""Up to this many tie groups, the docid keys are sorted group by group, in place."""


def index_tied_lists(con: duckdb.DuckDBPyConnection, table: str, lo: int, hi: int) -> None:
    """Write the ``tied_ranks`` rows of the densely tied lists ``lo <= list_id < hi`` of row
    table ``table``: by what their list_stats rows hold (which must be written, ``n_scores``
    included), fewer distinct scores than retrieved, non-ignored rows and at most half as
    many (the rule of sql/lib/tied_ranks.sql; ``n_scores`` NULL: not indexed). A list with a
    few ties costs a query here and nothing more. In the caller's transaction."""
    bounds = {"lo": lo, "hi": hi}
    ranked = queries.fetch_rows(con, "store/indexed_lists", bounds)
    tied = np.array([i for i, indexed, _ in ranked if indexed], np.int32)
    rows = sum(int(n_ret) for _, indexed, n_ret in ranked if indexed)
    if not len(tied):
        return
    if len(tied) == len(ranked):  # every ranked list of the range
        got = fetch_columns(con, rows_sql("store/tied_rows", table), bounds, rows)
    else:
        con.register("_tied_lists", arrow_table(list_id=tied))
        try:
            got = fetch_columns(con, rows_sql("store/tied_rows_of", table), bounds, rows)
        finally:
            with contextlib.suppress(duckdb.Error):
                con.unregister("_tied_lists")
    points = tied_points(
        np.asarray(got["list_id"]),
        np.asarray(got["score"]),
        np.asarray(got["label"]) == 1,
        np.asarray(got["seq"]),
        got["item"],  # int32 ids as NumPy, text ids as Arrow
    )
    del got
    names = ("list_id", "k", "n_optimistic", "n_pessimistic", "n_input", "n_docid")
    rows = arrow_table(
        **{n: v.astype(np.int32, copy=False) for n, v in zip(names, points, strict=True)}
    )
    insert_rows(con, "store/insert_tied_ranks_from", "_tied_ranks", rows)


_TEXT_BITS = 39  # an int32's decimal text: sign, 10 digits padded (< 2^34), its length
_POW10 = 10 ** np.arange(11, dtype=np.int64)


def docid_keys(
    items: pa.ChunkedArray | np.ndarray,
    rows: np.ndarray | None = None,
    out: np.ndarray | None = None,
) -> tuple[np.ndarray, int]:
    """``(key, bits)``: per item id (of ``items[rows]``, if given) a key below ``2^bits`` that
    ascends as the id's text descends in byte order (trec_eval's docno order,
    evalstore.core.points.docid_order); equal keys for equal ids. Integer ids are keyed from
    their decimal digits (no text is made, in steps of bounded memory): ``-`` sorts before the
    digits, and a text before the longer texts it begins. ``out``: a uint64 array of the
    keys' length to write them to (it may be ``rows`` itself, read step by step first)."""
    if isinstance(items, pa.ChunkedArray) and not pa.types.is_integer(items.type):
        import pyarrow.compute as pc  # text ids only: 0.2 s to import

        rank = pc.rank(items, sort_keys="descending", tiebreaker="dense")
        key = column_values(pa.chunked_array([rank])).astype(np.uint64)
        bits = max(int(key.max(initial=0)).bit_length(), 1)
        if rows is not None:
            key = key[rows]
        if out is not None:
            out[:] = key
            key = out
        return key, bits
    ids = column_values(items) if isinstance(items, pa.ChunkedArray) else np.asarray(items)
    if ids.dtype.itemsize > 4:
        raise AssertionError(f"item ids of {ids.dtype}: only int32 ids are keyed by digits")
    n = len(ids) if rows is None else len(rows)
    keys = np.empty(n, np.uint64) if out is None else out
    for lo in range(0, n, _CHUNK):
        part = ids[lo : lo + _CHUNK] if rows is None else ids[rows[lo : lo + _CHUNK]]
        part = part.astype(np.int32, copy=False)
        put = keys[lo : lo + _CHUNK].view(np.int64)
        mag = np.abs(part).view(np.uint32)  # |-2^31| wraps to -2^31: 2^31 as uint32
        digits = np.full(len(mag), 9, np.int8)  # 10 - the digits
        for power in _POW10[1:10].tolist():
            digits -= mag >= power
        np.take(_POW10, digits, out=put)  # the digits, left-aligned in 10 places
        put *= mag
        put <<= 4
        np.subtract(put, digits, out=put)
        put += 10
        np.bitwise_or(put, np.int64(1 << 38), out=put, where=part >= 0)
        np.subtract((1 << _TEXT_BITS) - 1, put, out=put)
    return keys, _TEXT_BITS


def _score_key(score: np.ndarray) -> np.ndarray:
    """Unsigned keys ascending as ``score`` descends, equal for equal scores (-0.0 = +0.0)."""
    if score.dtype == np.float32:
        bits, ints, shift = np.uint32, np.int32, 31
    else:
        score = np.asarray(score, np.float64)
        bits, ints, shift = np.uint64, np.int64, 63
    raw = (score + score.dtype.type(0.0)).view(bits)
    flip = (raw.view(ints) >> shift).view(bits)
    flip |= bits(1 << shift)
    np.bitwise_xor(raw, flip, out=flip)
    np.invert(flip, out=flip)
    return flip


def _groups(list_id: np.ndarray, score: np.ndarray, base: int) -> tuple[np.ndarray, int]:
    """``(g, bits)``: per row its tie group as an integer below ``2^bits``, ascending in
    ranking order (list, then score from the highest): a float32 score keyed by its bits, a
    double by its rank among the distinct doubles (:func:`dense_rank`: a sort of values, 3-5x
    cheaper than a sort and a search of every row); of several lists, the list above those 32
    bits, the groups then numbered 0, 1, ... (a sort and a search: as cheap as dense_rank at
    2^20 rows of densely tied lists, the most that are indexed at once)."""
    one = list_id.min() == list_id.max()
    if score.dtype == np.float32:
        wide = np.empty(len(score), np.uint64)
        for lo in range(0, len(score), _CHUNK):
            wide[lo : lo + _CHUNK] = _score_key(score[lo : lo + _CHUNK])
    else:
        wide = dense_rank(_score_key(score))
    if one:
        return wide, 32 if score.dtype == np.float32 else max(int(wide.max()).bit_length(), 1)
    key = np.subtract(list_id, base, dtype=np.int64).view(np.uint64) << np.uint64(32)
    key |= wide
    del wide
    ordered = np.sort(key)
    distinct = ordered[np.append(True, ordered[1:] != ordered[:-1])]
    del ordered
    g = np.searchsorted(distinct, key).astype(np.uint64)
    return g, max((len(distinct) - 1).bit_length(), 1)


def _input_order(
    list_id: np.ndarray, score: np.ndarray, seq: np.ndarray, base: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, new)``: the rows in input order (list, score from the highest, seq), and where
    a tie group begins among them. One sort of ``group << bits | seq`` keys when seq values
    are distinct and the key fits, its rows found from seq; else a lexsort."""
    n = len(seq)
    g, gbits = _groups(list_id, score, base)
    low = int(seq.min())
    span = int(seq.max()) - low + 1
    sbits = max((span - 1).bit_length(), 1)
    rows: np.ndarray | None = None
    ascending = all(
        bool(np.all(seq[lo + 1 : hi + 1] > seq[lo:hi]))
        for lo in range(0, n - 1, _CHUNK)
        for hi in [min(lo + _CHUNK, n - 1)]
    )
    pbits = max((n - 1).bit_length(), 1)
    if ascending and gbits + pbits <= KEY_BITS:  # as stored: input order is row order
        key = g
        key <<= np.uint64(pbits)
        for lo in range(0, n, _CHUNK):
            key[lo : lo + _CHUNK] |= np.arange(lo, min(lo + _CHUNK, n), dtype=np.uint64)
        key.sort()
        new = _heads_differ(key, pbits)
        key &= np.uint64((1 << pbits) - 1)
        return key.view(np.int64), new
    if gbits + sbits <= KEY_BITS and span <= 4 * n + 1024:
        s = np.subtract(seq, low, dtype=np.int64)
        where = np.empty(span, np.int64)
        where[s] = np.arange(n)
        if np.array_equal(where[s], np.arange(n)):  # seq values distinct
            key = g << np.uint64(sbits)
            key |= s.view(np.uint64)
            del s
            key.sort()
            rows = where[(key & np.uint64((1 << sbits) - 1)).view(np.int64)]
            key >>= np.uint64(sbits)
            heads = key
        del where
    if rows is None:
        rows = np.lexsort((seq, g))
        heads = g[rows]
    del g
    return rows, _heads_differ(heads, 0)


def _heads_differ(key: np.ndarray, shift: int) -> np.ndarray:
    """Where ``key >> shift`` differs from the element before (True at 0), in steps."""
    n = len(key)
    new = np.empty(n, bool)
    new[:1] = True
    s = np.uint64(shift)
    for lo in range(1, n, _CHUNK):
        hi = min(lo + _CHUNK, n)
        np.not_equal(key[lo:hi] >> s, key[lo - 1 : hi - 1] >> s, out=new[lo:hi])
    return new


def _docid_labels(
    new: np.ndarray,
    keys: tuple[np.ndarray, int],
    labels: np.ndarray,
    again: Callable[[], tuple[np.ndarray, np.ndarray]],
) -> np.ndarray:
    """The labels of rows in input order (tie groups at ``new``) sorted within their groups
    by docid ``keys`` (:func:`docid_keys` of their items, sorted here in place) then seq: the
    keys ``key << 1 | label`` sorted group by group (or, with many groups, with the group in
    the high bits), or, when an item id repeats within a group or the key does not fit, a
    lexsort of the keys and seq that ``again()`` gives anew."""
    key, tbits = keys
    n = len(key)
    starts = np.flatnonzero(new)
    if len(starts) <= SORTED_ALONE and tbits + 1 <= KEY_BITS:
        key <<= np.uint64(1)
        key |= labels
        for lo, hi in zip(starts.tolist(), [*starts[1:].tolist(), n], strict=True):
            key[lo:hi].sort()
    elif max((len(starts) - 1).bit_length(), 1) + tbits + 1 <= KEY_BITS:
        key <<= np.uint64(1)
        key |= labels
        group = np.cumsum(new, dtype=np.int64) - 1
        np.left_shift(group, tbits + 1, out=group)
        key |= group.view(np.uint64)
        del group
        key.sort()
    else:
        key = np.empty(0, np.uint64)
    if len(key):
        mask = np.uint64((1 << (tbits + 1)) - 2)  # the docid key, without group or label
        repeated = False
        for lo in range(1, n, _CHUNK):
            hi = min(lo + _CHUNK, n)
            same = (key[lo:hi] & mask) == (key[lo - 1 : hi - 1] & mask)
            same &= ~new[lo:hi]
            if np.any(same):
                repeated = True
                break
        if not repeated:
            key &= np.uint64(1)
            return key.view(np.uint8)[0 if _LITTLE else 7 :: 8].astype(bool)
    del key
    key, seq = again()
    group = np.cumsum(new, dtype=np.int64)
    return labels[np.lexsort((seq, key, group))]


def tied_points(
    list_id: np.ndarray,
    score: np.ndarray,
    positive: np.ndarray,
    seq: np.ndarray,
    items: pa.ChunkedArray | np.ndarray,
) -> Arrays:
    """``(list_id, k, n_optimistic, n_pessimistic, n_input, n_docid)`` of the retrieved,
    non-ignored rows given (any order): per list and k = 1 .. its positives, the rank of its
    k-th positive in each policy's order (the keys of sql/lib/ranking_points.sql), as
    store/tied_ranks_view defines them. ``items``: the rows' item ids (int32, or text as
    Arrow)."""
    n = len(list_id)
    if not n:
        return (np.empty(0, np.int64),) * 6
    positive = np.asarray(positive, bool)
    base = int(list_id.min())
    size = int(list_id.max()) - base + 1
    if size == 1:
        row_start, pos_count = np.zeros(1, np.int64), np.array([np.count_nonzero(positive)])
    else:
        local = np.subtract(list_id, base, dtype=np.int64)
        row_start = np.concatenate(([0], np.cumsum(np.bincount(local, minlength=size))[:-1]))
        pos_count = np.bincount(local[positive], minlength=size)
        del local
    pos_start = np.concatenate(([0], np.cumsum(pos_count)[:-1]))
    rows, new = _input_order(list_id, score, seq, base)
    labels = positive[rows]
    at = np.flatnonzero(labels).astype(np.int32)  # the positives' places, list by list
    if size == 1:
        pos_list = np.zeros(len(at), np.int32)
        first = np.int32(0)
    else:
        pos_list = np.repeat(np.arange(size, dtype=np.int32), pos_count)
        first = row_start.astype(np.int32)[pos_list]
    k = np.arange(1, len(at) + 1, dtype=np.int32)
    k -= pos_start.astype(np.int32)[pos_list]
    n_input = at - first
    n_input += 1
    starts = np.flatnonzero(new).astype(np.int32)
    size_of = np.diff(starts, append=np.int32(n))
    # positives per group (reduceat would first make an int32 copy of every row's label)
    held = np.diff(np.searchsorted(at, starts), append=len(at)).astype(np.int32)
    before = np.cumsum(held, dtype=np.int32) - held  # positives before each group (all lists)
    group = np.repeat(np.arange(len(starts), dtype=np.int32), held)  # of each positive
    a = starts[group]  # the group's first place, less the list's
    a -= first
    n_optimistic = np.arange(1, len(at) + 1, dtype=np.int32)
    n_optimistic -= before[group]
    n_optimistic += a  # a + the positive's place among its group's
    n_pessimistic = (size_of - held)[group]
    n_pessimistic += n_optimistic
    del starts, size_of, held, before, group, a, at

    def again() -> tuple[np.ndarray, np.ndarray]:
        rows = _input_order(list_id, score, seq, base)[0]
        return docid_keys(items, rows)[0], np.asarray(seq)[rows]

    keys = docid_keys(items, rows, out=rows.view(np.uint64))  # rows: spent here
    del rows
    by_docid = _docid_labels(new, keys, labels, again)
    n_docid = np.flatnonzero(by_docid).astype(np.int32)
    n_docid -= first
    n_docid += 1
    ids = pos_list + np.int32(base)  # at most the greatest list id, an int32
    return ids, k, n_optimistic, n_pessimistic, n_input, n_docid
