"""The transaction of a ranked-list ingest with its groups file: the run, its rows (inserted
by the streaming or the direct path), its groups rows and the checks that need them, all or
nothing. The transaction itself is :mod:`evalstore.ingest.written`'s (no polars); this
module adds a groups file's rows, read with polars (:mod:`evalstore.ingest.lists`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import duckdb
import polars as pl
import pyarrow as pa

from evalstore.db import queries
from evalstore.errors import InvalidInput
from evalstore.ingest.lists import check_matched, check_unlisted
from evalstore.ingest.sources import Source
from evalstore.ingest.spec import Spec
from evalstore.ingest.written import IngestResult, Written, check_list_ids, write_rows
from evalstore.runs import registry as runs

if TYPE_CHECKING:
    from evalstore.db.connection import Database

__all__ = ["IngestResult", "Target", "Written", "check_list_ids", "write_run"]


@dataclass
class Target:
    """The run an ingest writes, and its list metadata."""

    meta: runs.RunMeta
    replace: bool
    append: bool
    group_frame: pl.DataFrame | None
    groups_source: Source | None


@dataclass
class _FrameGroups:
    """A groups file's rows (:func:`~evalstore.ingest.lists.read_groups`) for
    :func:`~evalstore.ingest.written.write_rows`."""

    frame: pl.DataFrame
    label: str

    def lists(self, names: pa.Table, task: str) -> pa.Table:
        frame = pl.DataFrame(pl.from_arrow(names))
        check_matched(self.frame, frame, self.label, task)  # a row for no list: refused
        joined = frame.join(self.frame, on="group_id", how="full", coalesce=True, nulls_equal=True)
        return joined.to_arrow()

    def check(self, con: duckdb.DuckDBPyConnection, run_id: int, task: str) -> None:
        low = queries.fetch_rows(
            con, "store/n_positives_below_labels", {"run_id": run_id, "task": task}
        )
        if low:
            gid, n_pos, count = low[0]
            raise InvalidInput(
                f"{self.label}: list {gid!r} has n_positives {n_pos} but {count} positive "
                "labels; n_positives may only add positives not retrieved"
            )
        check_unlisted(con, run_id, task, self.label)


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
    groups = (
        None
        if target.group_frame is None
        else _FrameGroups(target.group_frame, _label_of(target.groups_source))
    )
    return write_rows(
        store,
        target.meta,
        spec,
        insert,
        replace=target.replace,
        append=target.append,
        groups=groups,
        transaction=transaction,
    )


def _label_of(source: Any) -> str:
    return str(source) if isinstance(source, (str, os.PathLike)) else "groups"
