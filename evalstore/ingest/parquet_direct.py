"""The direct path of a ranked-list ingest alone, without polars: what ``evalstore ingest
FILE.parquet`` runs when DuckDB reads the files itself (issue 32: its process imports
duckdb, NumPy and pyarrow, not polars nor the readers of other formats).

:func:`prepare` takes the call only where :func:`~evalstore.ingest.ingest` would take the
direct path without a word: Parquet files that are readable regular files, whose columns'
types pyarrow reads as polars would (integers, float32 and float64, strings, booleans), no
groups file or gains, and no row of :data:`~evalstore.ingest.direct_plan.REASONS` holding.
Anywhere else (a file it cannot tell about, an error to report) it returns None and the
caller runs the full ingest, which says what it says today. :func:`ingest_prepared` then
writes the run as :func:`~evalstore.ingest.ingest` writes it, logging the same debug lines,
and raises :class:`~evalstore.ingest.direct.Recheck` where the direct path refuses the rows
(the transaction rolled back): the caller then streams them on the same store
(:func:`evalstore.ingest.ranked.ingest_streamed`), which reports the problem with its file,
column and row.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from evalstore.errors import InvalidInput
from evalstore.ingest.direct import Recheck, insert_direct
from evalstore.ingest.direct_plan import LOG as DIRECT_LOG
from evalstore.ingest.direct_plan import DirectPlan, planned
from evalstore.ingest.paths import COLUMNS, check_file, format_of, parse_columns
from evalstore.ingest.spec import LABEL_CONVENTIONS, TASKS, Spec, score_warnings
from evalstore.ingest.written import IngestResult, write_rows
from evalstore.runs.meta import RunMeta

if TYPE_CHECKING:
    from evalstore.db.connection import Database, Progress

__all__ = ["Prepared", "Recheck", "ingest_prepared", "prepare"]

#: the logger of :func:`evalstore.ingest.options.dispatch`, whose line this path logs too
OPTIONS_LOG = logging.getLogger("evalstore.ingest.options")

#: Arrow types that polars reads as the type of this name (the names the rows of
#: direct_plan.REASONS compare); a column of any other type sends the call to the full ingest
_TYPES = {
    pa.int8(): "Int8",
    pa.int16(): "Int16",
    pa.int32(): "Int32",
    pa.int64(): "Int64",
    pa.uint8(): "UInt8",
    pa.uint16(): "UInt16",
    pa.uint32(): "UInt32",
    pa.uint64(): "UInt64",
    pa.float32(): "Float32",
    pa.float64(): "Float64",
    pa.string(): "String",
    pa.large_string(): "String",
    pa.string_view(): "String",
    pa.bool_(): "Boolean",
}


class Opened(NamedTuple):
    """A Parquet file as the rows of direct_plan.REASONS read it (its columns' types by
    polars' names)."""

    label: str
    schema: Mapping[str, Any]
    path: Path
    kind: str = "parquet"


@dataclass
class Prepared:
    """A call that the direct path takes: its run, spec (as the plan left it), plan, warnings
    and the debug lines the full ingest logs before its insert."""

    files: list[Path]
    meta: RunMeta
    spec: Spec
    plan: DirectPlan
    warnings: list[str]
    lines: list[tuple[logging.Logger, str]]


def _schema(path: Path) -> dict[str, str] | None:
    """Each column's type by polars' name, or None: a file pyarrow cannot read, without
    columns, with two columns of one name or a column of another type."""
    try:
        schema = pq.read_schema(path)
    except (OSError, ValueError, pa.ArrowException):
        return None
    found = {field.name: _TYPES.get(field.type) for field in schema}
    if not found or len(found) < len(schema) or None in found.values():
        return None
    return {name: str(kind) for name, kind in found.items()}


def prepare(
    files: Sequence[str | os.PathLike[str]],
    *,
    task: str,
    meta: RunMeta,
    fmt: str | None,
    columns: Sequence[str] | Mapping[str, str] | None,
    negate_score: bool,
    labels: str | None,
) -> Prepared | None:
    """The direct ingest of ``files`` (as :func:`~evalstore.ingest.ingest` takes these
    arguments), planned from the files' statistics; None where the full ingest must run: it
    would refuse the call, stream the files, or this module cannot tell. Nothing is written
    and nothing raised."""
    if task not in TASKS or (labels is not None and labels not in LABEL_CONVENTIONS):
        return None
    if not files or fmt not in (None, "parquet"):
        return None
    try:
        spec = Spec(task, parse_columns(columns, (*COLUMNS, "gain")), labels or "pm1",
                    negate_score, labels is None)  # fmt: skip
        paths = [Path(f) for f in files]
        for path in paths:
            check_file(path)
            if format_of(path, fmt) != "parquet":
                return None
    except InvalidInput:
        return None
    opened = []
    for path in paths:
        schema = _schema(path)
        if schema is None or spec.source_column("gain") in schema:
            return None
        opened.append(Opened(str(path), schema, path))
    with duckdb.connect() as con:
        plan, line = planned(con, opened, spec)
    if plan is None:
        return None
    intro = f"--task {task}: {len(paths)} input(s) into run {meta.ref}"
    warnings = score_warnings(spec, [source.label for source in opened])
    return Prepared(paths, meta, spec, plan, warnings, [(OPTIONS_LOG, intro), (DIRECT_LOG, line)])


def ingest_prepared(
    store: Database, prepared: Prepared, progress: Progress | None = None
) -> IngestResult:
    """Write the run of ``prepared`` by the direct path, in one transaction, as
    :func:`~evalstore.ingest.ingest` does (the same rows, result and debug lines).

    Raises:
        Recheck: the direct path refused the rows; nothing is written (the caller streams
            them: :func:`evalstore.ingest.ranked.ingest_streamed`).
        (and what :func:`~evalstore.ingest.ingest` raises on the direct path)
    """
    spec, plan, meta = prepared.spec, prepared.plan, prepared.meta
    try:
        result = write_rows(
            store,
            meta,
            spec,
            lambda first: insert_direct(store.con, plan, spec, first, progress),
            replace=meta.replace,
            append=meta.append,
        )
    finally:  # logged where the full ingest logs them, before its insert: in the same order
        for logger, line in prepared.lines:
            logger.debug("%s", line)
    result.warnings = prepared.warnings
    return result
