"""Export runs to Parquet, the layout Spark reads (:mod:`evalstore.scale.importer` reads it
back into a store; :mod:`evalstore.scale.layout` describes the folder).

``<table>`` is one of the raw tables (runs, scores, groups, matches, pairs, outcomes),
``logged_values`` (values logged with ``evalstore log``) or a detection run's (det_images,
det_categories, det_truth, det_boxes); the ``run_id`` column lives only in
the folder name, where Spark's partition discovery finds it. A run without rows in a table
has no folder there. DuckDB ENUMs (``task``) and JSON (``runs.params``) are written as text;
lists, maps and every other type keep their Parquet twin, so an export imports back bit for
bit. The manifest records each file's SHA-256 (:mod:`~evalstore.scale.checksums`), which an
import checks before it reads the file. Cached metric values are not exported (``evalstore
eval`` computes them again from the rows).

One export folder holds the runs of one store: the manifest records the store's identity
(:meth:`~evalstore.db.connection.Database.store_id`), and exporting another store into it is
refused, since run ids of two stores overlap and Spark finds a run by its id. Re-exporting a
run of the same store replaces its folders atomically: every table of the run is written to
``.tmp-*`` folders first (Spark skips names starting with ``.``), then a journal is written and
the folders are swapped by renames, the manifest updated and the old folders removed. A
failure while writing leaves the previous export untouched; a crash during the swap is rolled
forward by the next export into the same folder.

An export killed at any point is recovered by the next export into the folder: a new folder
gets its manifest (no runs yet) before anything else, so a folder with table folders always
has one; at any moment the manifest lists complete runs only. The next export finishes an
interrupted swap from its journal, removes the staging folders and temporary files (names of
the exact forms :mod:`~evalstore.scale.layout` writes, nothing else), and writes every run
asked for. ``EVALSTORE_FAULT`` kills an export at a chosen step, for tests (see layout.py).
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from evalstore.analysis import det_lists, det_matching, estimates
from evalstore.db import queries
from evalstore.errors import EvalstoreError, SchemaError
from evalstore.scale.checksums import file_sha256
from evalstore.scale.layout import (
    ALL_TABLES,
    BATCH_ROWS,
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    PART,
    PARTITION_COLUMN,
    TABLES,
    apply_journal,
    check_empty,
    check_manifest,
    fault_point,
    journal_path,
    journals,
    locked,
    partition_path,
    prepare_folder,
    read_manifest,
    recover,
    staging_path,
    write_json,
)
from evalstore.scale.merge import merge_into
from evalstore.version import __version__

if TYPE_CHECKING:
    from evalstore.db.connection import Progress
    from evalstore.runs.registry import RunRef
    from evalstore.store.facade import Store

# The layout's names are re-exported: callers import them from here.
__all__ = [
    "ALL_TABLES",
    "FORMAT",
    "FORMAT_VERSION",
    "MANIFEST",
    "TABLES",
    "check_manifest",
    "export_runs",
    "locked",
    "partition_path",
    "read_manifest",
    "recover",
    "table_columns",
]

_TEXT_TYPES = ("JSON",)  # exported as VARCHAR, like every ENUM(...)


# -- columns --------------------------------------------------------------------------------


def table_columns(con: duckdb.DuckDBPyConnection, table: str) -> list[dict[str, Any]]:
    """The exported columns of ``table`` (all but run_id): name, exported type, source type."""
    if table not in ALL_TABLES:
        raise EvalstoreError(f"not an exportable table: {table!r}")
    out = []
    for name, dtype, nullable in queries.fetch_rows(con, "export/table_columns", {"table": table}):
        if name == PARTITION_COLUMN:
            continue
        column: dict[str, Any] = {"name": name, "type": dtype, "nullable": bool(nullable)}
        if dtype.startswith("ENUM(") or dtype in _TEXT_TYPES:
            column["type"] = "VARCHAR"
            column["source_type"] = dtype
        out.append(column)
    if not out:
        raise SchemaError(f"the store has no table {table!r}")
    return out


def _select_list(columns: Sequence[Mapping[str, Any]], allowed: set[str]) -> str:
    """The select list of export/select_partition: each column quoted, those exported as
    text through export/text_column."""
    parts = []
    for c in columns:
        ident = queries.quote_ident(c["name"], allowed)
        if "source_type" in c:
            ident = queries.template("export/text_column", column=ident)
        parts.append(ident)
    return ", ".join(parts)


# -- export ---------------------------------------------------------------------------------


def _write_partition(
    con: duckdb.DuckDBPyConnection,
    table: str,
    columns: Sequence[Mapping[str, Any]],
    run_id: int,
    folder: Path,
    copy: str | None = None,
) -> int:
    """Stream one run's rows of ``table`` (or of ``copy``, a temporary table of its columns)
    into ``folder/part-0.parquet``; returns the row count (0: nothing is written)."""
    allowed = {c["name"] for c in columns}
    # The table is from TABLES and the columns from the store's catalogue (quote_ident);
    # the run id is bound.
    sql = queries.template(
        "export/select_partition",
        columns=_select_list(columns, allowed),
        table=queries.quote_ident(copy, {copy})
        if copy
        else queries.quote_ident(table, set(ALL_TABLES)),
        order="order by list_id, seq" if table == "scores" and not copy else "",
    )
    reader = con.sql(sql, params={"run_id": run_id}).to_arrow_reader(BATCH_ROWS)
    rows = 0
    writer: pq.ParquetWriter | None = None
    held: list[pa.RecordBatch] = []
    written = 0  # the rows of the row groups written so far
    try:
        for batch in reader:
            if batch.num_rows == 0:
                continue
            if writer is None:
                folder.mkdir(parents=True)
                writer = pq.ParquetWriter(
                    folder / PART, reader.schema, compression="zstd", write_statistics=True
                )
            held.append(batch)
            rows += batch.num_rows
            if rows - written >= BATCH_ROWS:
                held = _write_row_groups(writer, held, reader.schema, final=False)
                written = rows - sum(b.num_rows for b in held)
        if writer is not None:
            _write_row_groups(writer, held, reader.schema, final=True)
    finally:
        if writer is not None:
            writer.close()
        reader.close()
    return rows


def _write_row_groups(
    writer: pq.ParquetWriter, held: list[pa.RecordBatch], schema: pa.Schema, final: bool
) -> list[pa.RecordBatch]:
    """Write the rows of ``held`` as row groups of BATCH_ROWS rows each (the rest too when
    ``final``); returns the batches left. DuckDB hands a query's rows over in batches whose
    sizes depend on its threads and the store's row groups: written as they came, two exports
    of the same rows would differ in bytes, and so in the SHA-256 their manifests record."""
    table = pa.Table.from_batches(held, schema)
    while table.num_rows >= BATCH_ROWS or (final and table.num_rows):
        writer.write_table(table.slice(0, BATCH_ROWS).combine_chunks(), row_group_size=BATCH_ROWS)
        table = table.slice(BATCH_ROWS)
    return table.to_batches()


def _new_manifest(store: Store, tables: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "schema_version": store.schema_version(),
        "evalstore_version": __version__,
        "layout": f"<table>/{PARTITION_COLUMN}=<id>/{PART} ({PARTITION_COLUMN} only in the path)",
        "partition_column": {"name": PARTITION_COLUMN, "type": "INTEGER"},
        "store_id": store.store_id(),
        "tables": {t: {"columns": cols} for t, cols in tables.items()},
        "runs": [],
    }


def _now() -> str:
    return datetime.now(timezone.utc).replace(tzinfo=None).isoformat(timespec="seconds")


def export_runs(
    store: Store,
    out_dir: str | os.PathLike[str],
    runs: Sequence[RunRef] | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Export runs' raw rows to Parquet, one folder per (table, run), plus a manifest.

    Rows are streamed in batches (memory stays bounded), one run at a time. Exporting into a
    folder that already holds an export adds the runs to it; a run exported again replaces
    its folders atomically, and a run of the same EXPERIMENT/NAME under another id (a run
    ingested again with ``--replace``) replaces the older one. An export killed part-way is
    finished by the next one into the folder (module docstring).

    Args:
        store: an open store (read-only is enough). A keypoint run's homographies still to
            estimate are estimated first: kept by a writable store, for the export alone by
            a read-only one.
        out_dir: the export folder; created when missing. It must be empty or an export
            whose raw tables have the same columns.
        runs: run references; default every run of the store.
        progress: called with ("export", runs done, runs total).

    Returns:
        ``{"dir", "schema_version", "runs": [{"run_id", "experiment", "name", "rows"}],
        "rows": {table: rows written}}``.

    Raises:
        EvalstoreError: the folder holds something else, or raw tables of other columns; it
            cannot be created or written (one line naming the path).
        RunNotFound: an unknown run reference.
    """
    root = Path(out_dir)
    if runs is None:
        wanted = [int(r[0]) for r in queries.fetch_rows(store.con, "export/all_runs")]
    else:
        wanted = list(dict.fromkeys(store.resolve(r) for r in runs))
    prepare_folder(root)
    try:
        if not (root / MANIFEST).exists() and not journals(root):
            check_empty(root)  # before the lock file: nothing is written into a foreign folder
        with locked(root):
            return _export_all(store, root, wanted, progress)
    except OSError as exc:  # the disk is full, a folder is not writable...
        where = exc.filename or root
        raise EvalstoreError(f"{where}: cannot write the export ({exc.strerror or exc})") from None


def _export_all(
    store: Store, root: Path, wanted: list[int], progress: Progress | None
) -> dict[str, Any]:
    _estimate_first(store, wanted)
    tables = {t: table_columns(store.con, t) for t in ALL_TABLES}
    fresh = _new_manifest(store, tables)
    names = {
        int(r[0]): (r[1], r[2])
        for r in queries.fetch_rows(store.con, "export/run_names", {"runs": wanted})
    }
    recover(root)
    if (root / MANIFEST).exists():
        manifest = merge_into(read_manifest(root), fresh, root, names)
    else:
        check_empty(root)
        manifest = fresh
        write_json(root / MANIFEST, manifest)  # first: the folder is an export from now on
        fault_point("manifest")
    totals = dict.fromkeys(ALL_TABLES, 0)
    exported: list[dict[str, Any]] = []
    for done, run_id in enumerate(wanted):
        experiment, name = names[run_id]
        entry, manifest = _export_run(store, root, manifest, tables, run_id, experiment, name)
        for table, n in entry["rows"].items():
            totals[table] += n
        exported.append(entry)
        if progress is not None:
            progress("export", done + 1, len(wanted))
    return {
        "dir": str(root),
        "schema_version": manifest["schema_version"],
        "runs": exported,
        "rows": totals,
    }


def _estimate_first(store: Store, run_ids: Sequence[int]) -> None:
    """Spark reads the estimated homographies from the export: a writable store makes and
    keeps those still pending (:mod:`evalstore.analysis.estimates`) before the rows are written; a
    read-only one makes them for the export alone (:func:`_export_run`)."""
    if store.read_only:
        return
    pending = [run_id for run_id, _ in estimates.pending_runs(store, run_ids)]
    if pending:
        with store.transaction():
            estimates.ensure_estimates(store, pending, needed_by="export")
    # and the matches of detection runs under every protocol (the metric SQL reads them), and
    # their ranked lists (the metrics of ranked lists read them)
    for matching in det_matching.MATCHINGS:
        with store.transaction():
            det_matching.ensure_matches(store, run_ids, needed_by="export", matching=matching)
    with store.transaction():
        det_lists.ensure_lists(store, run_ids, needed_by="export")


def _export_run(
    store: Store,
    root: Path,
    manifest: dict[str, Any],
    tables: dict[str, list[dict[str, Any]]],
    run_id: int,
    experiment: str,
    name: str,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Write one run's folders to staging, then swap them in; returns its manifest entry and
    the new manifest."""
    tag = uuid.uuid4().hex[:12]
    rows: dict[str, int] = {}
    staged: list[Path] = []
    try:
        store.con.execute("begin transaction")  # one snapshot of the run's rows
        try:
            for table in ALL_TABLES:
                folder = staging_path(root, table, run_id, tag)
                staged.append(folder)
                # pairs whose estimates are pending on a read-only store: made for the export
                copy = estimates.with_estimates(store, run_id) if table == "pairs" else None
                rows[table] = _write_partition(
                    store.con, table, tables[table], run_id, folder, copy
                )
                if rows[table]:
                    fault_point("partition")
        finally:
            store.con.execute("rollback")  # nothing was written to the store
    except BaseException:
        for folder in staged:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    # An older id of the same EXPERIMENT/NAME (replaced in the store) leaves the export.
    superseded = [
        int(r["run_id"])
        for r in manifest["runs"]
        if r["experiment"] == experiment and r["name"] == name and int(r["run_id"]) != run_id
    ]
    entry = {
        "run_id": run_id,
        "experiment": experiment,
        "name": name,
        "exported_at": _now(),
        "rows": rows,
        "sha256": {
            t: file_sha256(staging_path(root, t, run_id, tag) / PART) for t in rows if rows[t]
        },
    }
    kept = [r for r in manifest["runs"] if int(r["run_id"]) not in {run_id, *superseded}]
    new_manifest = {**manifest, "runs": sorted([*kept, entry], key=lambda r: int(r["run_id"]))}
    moves = [{"table": t, "run_id": run_id, "new": rows[t] > 0} for t in ALL_TABLES]
    moves += [{"table": t, "run_id": old, "new": False} for old in superseded for t in ALL_TABLES]
    journal = {"tag": tag, "moves": moves, "manifest": new_manifest}
    write_json(journal_path(root, tag), journal)
    fault_point("journal")
    apply_journal(root, journal)
    fault_point("run")
    return entry, new_manifest
