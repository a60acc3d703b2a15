"""The transaction of a ranked-list ingest: the run, its rows (inserted by the streaming or
the direct path), its groups rows and the checks that need them, all or nothing."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import duckdb
import polars as pl

from evalstore.db import queries
from evalstore.db.schema import rows_sql
from evalstore.errors import EvalstoreError, InvalidInput
from evalstore.ingest.index import index_lists
from evalstore.ingest.lists import NO_GROUPS, check_matched, check_unlisted
from evalstore.ingest.sources import Source
from evalstore.ingest.validate import INT32, Spec, check_labels
from evalstore.runs import registry as runs

if TYPE_CHECKING:
    from evalstore.db.connection import Database

__all__ = ["IngestResult", "Target", "Written", "check_list_ids", "write_run"]


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


@dataclass
class Target:
    """The run an ingest writes, and its list metadata."""

    meta: runs.RunMeta
    replace: bool
    append: bool
    group_frame: pl.DataFrame | None
    groups_source: Source | None


@dataclass
class Written:
    """What one insert of a run's rows did."""

    rows: int
    not_retrieved: int
    positives: int  # rows labelled +1, and -1 (the others are 0: ignored)
    negatives: int
    names: pl.DataFrame  # group_id (text or NULL) and list_id of each list
    ids: int  # list ids taken, from the first one on (at least the number of lists)
    spans: list[tuple[str, int, int]]  # (input label, first seq, end seq)
    maybe_duplicates: bool
    method: str


def write_run(
    store: Database,
    target: Target,
    spec: Spec,
    insert: Callable[[int], Written],
    *,
    transaction: bool = True,
) -> IngestResult:
    """One transaction: the run, its rows (``insert``, given the first free list id), its
    groups rows and the checks that need them (``transaction=False``: inside the caller's
    transaction, which then holds several tasks of one run)."""
    con, task, meta = store.con, spec.task, target.meta
    with store.transaction() if transaction else contextlib.nullcontext(con):
        run_id, replaced = runs.open_run(
            con,
            meta,
            replace=target.replace,
            append=target.append,
            has_task=lambda rid: (
                queries.fetch_rows(con, "store/run_has_task", {"run_id": rid, "task": task})[0][0]
                > 0
            ),
            task=task,
        )
        first_list_id = queries.fetch_rows(con, "store/next_list_id")[0][0]
        written = insert(first_list_id)
        if target.group_frame is not None:  # a groups-file row for no list: refused
            check_matched(target.group_frame, written.names, _label_of(target.groups_source), task)
        lists = written.names.join(
            target.group_frame if target.group_frame is not None else NO_GROUPS,
            on="group_id",
            how="full",
            coalesce=True,
            nulls_equal=True,
        )
        con.register("_groups_raw", lists.to_arrow())
        try:
            con.execute(queries.load("store/stage_groups").text)
            queries.run(con, "store/insert_groups", {"run_id": run_id, "task": task})
        finally:
            with contextlib.suppress(duckdb.Error):
                queries.run(con, "store/drop_staged_groups")
            with contextlib.suppress(duckdb.Error):
                con.unregister("_groups_raw")
        if written.maybe_duplicates:
            _check_duplicates(con, spec.table, first_list_id, written)
        index_lists(con, spec.table, first_list_id, first_list_id + written.ids)
        inputs = [label for label, _, _ in written.spans]
        ignored = written.rows - written.positives - written.negatives
        check_labels(spec, inputs, written.positives, written.negatives, ignored)
        if target.group_frame is not None:
            low = queries.fetch_rows(
                con, "store/n_positives_below_labels", {"run_id": run_id, "task": task}
            )
            if low:
                gid, n_pos, count = low[0]
                raise InvalidInput(
                    f"{_label_of(target.groups_source)}: list {gid!r} has n_positives {n_pos} "
                    f"but {count} positive labels; n_positives may only add positives not "
                    "retrieved"
                )
            check_unlisted(con, run_id, task, _label_of(target.groups_source))
        queries.run(con, "store/set_next_list_id", {"next": first_list_id + written.ids})
    return IngestResult(
        run_id=run_id,
        experiment=meta.experiment,
        name=meta.name,
        task=task,
        rows=written.rows,
        lists=written.names.height,
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


def _label_of(source: Any) -> str:
    return str(source) if isinstance(source, (str, os.PathLike)) else "groups"


def _where(spans: list[tuple[str, int, int]], seq: int) -> str:
    for label, start, end in spans:
        if start <= seq < end:
            return f"{label} row {seq - start + 1}"
    return f"input position {seq}"
