"""The transaction of a ranked-list ingest, without polars: the run, its rows (inserted by
the streaming or the direct path), its lists' ``groups`` rows and the checks that need them,
all or nothing. A groups file's rows (read with polars) come in through :class:`ListGroups`,
which :mod:`evalstore.ingest.write` gives; the direct path of ``evalstore ingest``
(:mod:`evalstore.ingest.parquet_direct`) has none, and imports no polars."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import duckdb
import numpy as np
import pyarrow as pa

from evalstore.db import queries
from evalstore.db.schema import rows_sql
from evalstore.errors import EvalstoreError, InvalidInput
from evalstore.ingest.index import index_lists
from evalstore.ingest.spec import INT32, Spec, check_labels
from evalstore.runs import registry as runs
from evalstore.runs.meta import RunMeta

if TYPE_CHECKING:
    from evalstore.db.connection import Database

__all__ = [
    "IngestResult",
    "ListGroups",
    "Written",
    "check_list_ids",
    "list_names",
    "write_rows",
]


@dataclass
class IngestResult:
    """What an ingest wrote.

    ``positives``, ``negatives`` and ``ignored`` count the rows stored with label +1, -1 and
    0 (None for keypoint matches and outcomes, whose rows have no label); ``warnings`` are
    one-line notes about input that was stored but may not mean what the options say (a
    score column named like a distance without ``negate_score``). The library never prints
    them: the CLI shows each as a ``Warning: ...`` line.
    """

    run_id: int
    experiment: str
    name: str
    task: str
    rows: int
    lists: int
    not_retrieved: int
    replaced: bool = False
    files: list[str] = field(default_factory=list)
    method: str = "stream"  # "direct": DuckDB read the Parquet files; "stream": batches via polars
    positives: int | None = None
    negatives: int | None = None
    ignored: int | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def ref(self) -> str:
        return f"{self.experiment}/{self.name}"


#: the columns of a run's lists as ``store/stage_groups`` reads them (``_groups_raw``)
_LISTS = pa.schema(
    [
        ("group_id", pa.string()),
        ("list_id", pa.int32()),
        ("n_positives", pa.int32()),
        ("keys", pa.list_(pa.string())),
        ("values", pa.list_(pa.string())),
    ]
)


def list_names(group_ids: np.ndarray | None, list_ids: np.ndarray) -> pa.Table:
    """The lists of an insert: each one's group id as stored (the text of an integer, or NULL
    where ``group_ids`` is None: one list) and list id. Made from the arrays' buffers: neither
    pyarrow's conversions (which import pandas) nor its casts (pyarrow.compute)."""
    if group_ids is None:
        text = pa.nulls(len(list_ids), pa.string())
    else:
        digits = np.asarray(group_ids, dtype=np.int64).astype("S")  # as str(int), NUL-padded
        sizes = np.char.str_len(digits)
        offsets = np.zeros(len(digits) + 1, dtype=np.int32)
        np.cumsum(sizes, out=offsets[1:])
        packed = np.frombuffer(digits.tobytes(), dtype=np.uint8)
        data = packed[packed != 0]
        text = pa.Array.from_buffers(
            pa.string(), len(digits), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        )
    ids = np.ascontiguousarray(list_ids, dtype=np.int32)
    return pa.table(
        {
            "group_id": text,
            "list_id": pa.Array.from_buffers(pa.int32(), len(ids), [None, pa.py_buffer(ids)]),
        }
    )


@dataclass
class Written:
    """What one insert of a run's rows did."""

    rows: int
    not_retrieved: int
    positives: int  # rows labelled +1, and -1 (the others are 0: ignored)
    negatives: int
    names: pa.Table  # group_id (text or NULL) and list_id of each list (:func:`list_names`)
    ids: int  # list ids taken, from the first one on (at least the number of lists)
    spans: list[tuple[str, int, int]]  # (input label, first seq, end seq)
    maybe_duplicates: bool
    method: str


class ListGroups(Protocol):
    """A groups file's rows (per list: n_positives, slices), checked against a run's lists."""

    def lists(self, names: pa.Table, task: str) -> pa.Table:
        """The lists ``names`` with their groups-file columns (``_LISTS``'s), a row of the
        file for no list refused."""

    def check(self, con: duckdb.DuckDBPyConnection, run_id: int, task: str) -> None:
        """The checks of the file's n_positives against the run's indexed lists."""


def _bare_lists(names: pa.Table) -> pa.Table:
    """The lists without groups-file columns (n_positives, keys and values NULL)."""
    n = names.num_rows
    given = [names.column(c) for c in ("group_id", "list_id")]
    kept = [  # (a cast imports pyarrow.compute: only where the type is another)
        column if column.type == _LISTS.field(i).type else column.cast(_LISTS.field(i).type)
        for i, column in enumerate(given)
    ]
    nulls = [pa.nulls(n, _LISTS.field(c).type) for c in ("n_positives", "keys", "values")]
    return pa.table([*kept, *nulls], schema=_LISTS)


def write_rows(
    store: Database,
    meta: RunMeta,
    spec: Spec,
    insert: Callable[[int], Written],
    *,
    replace: bool,
    append: bool,
    groups: ListGroups | None = None,
    transaction: bool = True,
) -> IngestResult:
    """One transaction: the run, its rows (``insert``, given the first free list id), its
    groups rows (with ``groups``' columns) and the checks that need them
    (``transaction=False``: inside the caller's transaction, which then holds several tasks
    of one run)."""
    con, task = store.con, spec.task
    with store.transaction() if transaction else contextlib.nullcontext(con):
        run_id, replaced = runs.open_run(
            con,
            meta,
            replace=replace,
            append=append,
            has_task=lambda rid: (
                queries.fetch_rows(con, "store/run_has_task", {"run_id": rid, "task": task})[0][0]
                > 0
            ),
            task=task,
        )
        first_list_id = queries.fetch_rows(con, "store/next_list_id")[0][0]
        written = insert(first_list_id)
        lists = _bare_lists(written.names) if groups is None else groups.lists(written.names, task)
        con.register("_groups_raw", lists)
        try:
            queries.run(con, "store/insert_groups", {"run_id": run_id, "task": task})
        finally:
            with contextlib.suppress(duckdb.Error):
                con.unregister("_groups_raw")
        if written.maybe_duplicates:
            _check_duplicates(con, spec.table, first_list_id, written)
        index_lists(con, spec.table, first_list_id, first_list_id + written.ids, written.rows)
        inputs = [label for label, _, _ in written.spans]
        ignored = written.rows - written.positives - written.negatives
        check_labels(spec, inputs, written.positives, written.negatives, ignored)
        if groups is not None:
            groups.check(con, run_id, task)
        queries.run(con, "store/set_next_list_id", {"next": first_list_id + written.ids})
    return IngestResult(
        run_id=run_id,
        experiment=meta.experiment,
        name=meta.name,
        task=task,
        rows=written.rows,
        lists=written.names.num_rows,
        not_retrieved=written.not_retrieved,
        replaced=replaced,
        files=inputs,
        method=written.method,
        positives=written.positives,
        negatives=written.negatives,
        ignored=ignored,
    )


def check_list_ids(first: int, n: int) -> None:
    """Refuse to give out list ids beyond INTEGER (the next free one must fit too)."""
    if first + n > INT32[1]:
        raise EvalstoreError(
            f"this store has given out {first:,} list ids and has too few left for "
            f"{n:,} more; export its runs and import them into a new store (which numbers "
            "the lists again from 0)"
        )


def _check_duplicates(
    con: duckdb.DuckDBPyConnection, table: str, first_list_id: int, written: Written
) -> None:
    text = rows_sql("store/first_duplicate", table)
    params = {"lo": first_list_id, "hi": first_list_id + written.ids}
    dup = con.execute(text, queries.bind(text, params)).fetchall()
    if not dup:
        return
    group_id, item_id, first, second = dup[0]
    what = (
        f"item_id {item_id!r}"
        if group_id is None
        else f"(group_id, item_id) = ({group_id!r}, {item_id!r})"
    )
    here, there = _where(written.spans, second), _where(written.spans, first)
    if here.rsplit(" row ", 1)[0] == there.rsplit(" row ", 1)[0]:
        there = "row " + there.rsplit(" row ", 1)[1]
    raise InvalidInput(f"{here}: duplicate {what}, first seen at {there}")


def _where(spans: list[tuple[str, int, int]], seq: int) -> str:
    for label, start, end in spans:
        if start <= seq < end:
            return f"{label} row {seq - start + 1}"
    return f"input position {seq}"
