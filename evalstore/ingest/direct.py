"""The direct path for Parquet: files with integer group ids (and integer or text item ids)
are read by DuckDB straight into the row table, then checked in one pass over the inserted
rows. Anything it refuses (a bad value, a duplicate, an unreadable file, statistics that lie)
raises :class:`Recheck`, and the streaming path runs instead and reports the problem with
its file, column and row. Whether
the direct path is tried at all, and why not, is :mod:`~evalstore.ingest.direct_plan`'s
(:func:`plan_direct`, kept here for its callers)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

import duckdb
import numpy as np

from evalstore.db import queries
from evalstore.db.queries import quote_name
from evalstore.db.schema import rows_sql
from evalstore.ingest.direct_plan import SPARE_IDS, DirectPlan, plan_direct
from evalstore.ingest.spec import INT32, Spec
from evalstore.ingest.written import Written, list_names

if TYPE_CHECKING:
    from evalstore.db.connection import Progress

__all__ = ["DirectPlan", "Recheck", "insert_direct", "plan_direct"]


class Recheck(Exception):
    """The direct path met something (a bad value, a duplicate, an unreadable file) that the
    streaming path then finds again and reports with its file, column and row."""


_OPTIMIZER_LOCK = threading.Lock()  # one direct insert at a time changes the setting


@contextlib.contextmanager
def _unplanned_casts(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """DuckDB's statistics propagation drops the range checks of casts that a file's min/max
    statistics say cannot fail (an int64 id cast to INTEGER, a label to TINYINT); statistics
    that lie would then truncate values silently. Without it, such a value stops the insert.
    The setting is global to the database instance: it is set and restored on a connection of
    its own (the ingest's transaction may have failed by then), whatever stops the insert."""
    with _OPTIMIZER_LOCK:
        side = con.cursor()
        try:
            kept = str(queries.fetch_rows(side, "store/disabled_optimizers")[0][0] or "")
            names = [n.strip() for n in kept.split(",") if n.strip()]
            if "statistics_propagation" not in names:
                names.append("statistics_propagation")
            queries.run(side, "store/set_disabled_optimizers", {"names": ",".join(names)})
            try:
                yield
            finally:
                queries.run(side, "store/set_disabled_optimizers", {"names": kept})
        finally:
            side.close()


def _marks(
    bitmap: bytes, lists: int, items: int, slice_bits: int = 1 << 24
) -> tuple[int, np.ndarray]:
    """From the (list, item) bitmap of direct_check (a bitstring as bytes: bit list * items +
    item, after the padding bits that fill its first byte), the number of pairs marked and
    the lists with a mark. Unpacked at most about ``slice_bits`` bits at a time."""
    packed = np.frombuffer(bitmap, dtype=np.uint8)
    pad = len(packed) * 8 - lists * items
    if not 0 <= pad < 8:
        raise AssertionError(f"a bitmap of {len(packed)} bytes for {lists} x {items} pairs")

    def unpack(lo: int, hi: int) -> np.ndarray:  # bits [lo, hi) of the list-item range
        lo, hi = lo + pad, hi + pad
        return np.unpackbits(packed[lo // 8 : (hi + 7) // 8])[lo % 8 : lo % 8 + hi - lo]

    pairs, present = 0, np.zeros(lists, dtype=np.bool_)
    if items <= slice_bits:  # whole lists per slice
        step = slice_bits // items
        for first in range(0, lists, step):
            last = min(lists, first + step)
            bits = unpack(first * items, last * items)
            pairs += int(np.count_nonzero(bits))
            present[first:last] = bits.reshape(last - first, items).any(axis=1)
    else:  # a list over several slices
        for list_ in range(lists):
            for lo in range(list_ * items, (list_ + 1) * items, slice_bits):
                n = int(np.count_nonzero(unpack(lo, min((list_ + 1) * items, lo + slice_bits))))
                pairs += n
                present[list_] |= n > 0
    return pairs, np.flatnonzero(present)


def _equal_hashes(
    con: duckdb.DuckDBPyConnection, table: str, lo: int, lists: int, rows: int
) -> int:
    """Whether two (list, item) pairs of the ``rows`` rows of the lists ``lo`` <= list_id <
    ``lo + lists`` of ``table`` share a hash (1: maybe a duplicate, else 0): the hashes
    sorted by NumPy and neighbours compared, as the streaming path checks its keys. Read
    batch by batch into one array over the Arrow buffers (pyarrow's ``to_numpy`` imports
    pandas); a count other than ``rows`` counts as a shared hash."""
    text = rows_sql("store/direct_pair_hashes", table)
    reader = con.sql(text, params=queries.bind(text, {"lo": lo, "lists": lists}))
    keys, filled = np.empty(rows, dtype=np.uint64), 0
    for batch in reader.to_arrow_reader(1 << 20):
        column = batch.column(0)
        n = len(column)
        if filled + n > rows:
            return 1
        values = np.frombuffer(column.buffers()[1], np.uint64, n, column.offset * 8)
        keys[filled : filled + n] = values
        filled += n
    if filled != rows:
        return 1
    keys.sort()
    return int(bool(np.any(keys[1:] == keys[:-1])))


def _direct_sql(plan: DirectPlan, spec: Spec, path: str, not_retrieved: bool) -> str:
    """The insert of one file. Scores and +1/-1/0 labels are stored as they are and checked
    afterwards (direct_check); -inf becomes NULL only in a file that has one, and 0/1 or
    boolean labels are turned into +1/-1 (any other value stops the insert)."""
    score = quote_name(plan.score)
    if spec.negate_score:
        score = queries.template("store/score_negated", score=score)
    if not_retrieved:
        score = queries.template("store/score_not_retrieved", score=score)
    label = queries.template(f"store/label_{spec.labels}", label=quote_name(plan.label))
    return rows_sql(
        "store/insert_parquet",
        spec.table,
        group=quote_name(plan.group) if plan.group is not None else "0",
        item=quote_name(plan.item),
        score=score,
        label=label,
        file=queries.literal(path),
    )


def insert_direct(
    con: duckdb.DuckDBPyConnection,
    plan: DirectPlan,
    spec: Spec,
    first_list_id: int,
    progress: Progress | None,
) -> Written:
    """DuckDB reads the files into the row table (a 0/1 or boolean label of another value
    aborts the insert); one pass over the inserted rows then marks each (list, item) pair in
    a bitmap (fewer marks than rows: a duplicate), which also gives the lists that occur,
    counts the values the streaming path refuses and counts the labels by value. A list's
    id is its group id + a fixed offset. The plan's ranges come from the files' statistics,
    which are not trusted: a row outside them stops the insert or is missed by the count,
    and either way the streaming path runs instead."""
    if first_list_id + plan.groups + 1 > INT32[1]:
        raise Recheck  # the streaming path takes one id per list, or says none are left
    try:
        with _unplanned_casts(con):
            seq = 0
            for path, n, not_retrieved in plan.files:
                if progress is not None:
                    progress("ingest", seq, plan.rows)
                text = _direct_sql(plan, spec, path, not_retrieved)
                params = {"list_offset": first_list_id - plan.gmin, "seq_offset": seq}
                con.execute(text, queries.bind(text, params))
                seq += n
    except duckdb.InterruptException:
        raise  # the user stopped it: not a reason to try the streaming path
    except duckdb.Error:
        raise Recheck from None
    text_items = plan.text_items
    text = rows_sql("store/direct_check_text" if text_items else "store/direct_check", spec.table)
    params = {"lo": first_list_id, "lists": plan.groups}
    if not text_items:
        params |= {"items": plan.items, "imin": plan.imin}
    try:
        found = con.execute(text, queries.bind(text, params)).fetchall()[0]
    except duckdb.InterruptException:
        raise
    except duckdb.Error:  # an item id outside the range the statistics gave
        raise Recheck from None
    if text_items:  # the lists' bitmap; pairs: rows, or fewer when two pairs share a hash
        bitmap, rows, bad, not_retrieved, positives, negatives = found
        present = _marks(bitmap, plan.groups, 1)[1]
        pairs = rows - _equal_hashes(con, spec.table, first_list_id, plan.groups, rows)
    else:
        bitmap, rows, bad, not_retrieved, positives, negatives = found
        pairs, present = _marks(bitmap, plan.groups, plan.items)
    if rows != plan.rows:  # a list id outside the range the statistics gave
        raise Recheck
    if bad or pairs < rows or plan.groups > 2 * len(present) + SPARE_IDS:
        # a bad value or a duplicate (the streaming path says where; text ids: a duplicate
        # or two pairs of one hash, which the streaming path tells apart), or sparse group ids
        # (the streaming path numbers the lists densely)
        raise Recheck
    names = list_names(present + plan.gmin if plan.group is not None else None,
                       present + first_list_id)  # fmt: skip
    if progress is not None:
        progress("ingest", plan.rows, plan.rows)
    spans, start = [], 0
    for path, n, _ in plan.files:
        spans.append((path, start, start + n))
        start += n
    return Written(
        rows=plan.rows,
        not_retrieved=int(not_retrieved),
        positives=int(positives),
        negatives=int(negatives),
        names=names,
        ids=plan.groups,
        spans=spans,
        maybe_duplicates=False,
        method="direct",
    )
