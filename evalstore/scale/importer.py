"""Import of an export folder (:mod:`evalstore.scale.export`) into a store: every run in one
transaction (all or nothing), every file checked against its SHA-256 first, rows streamed
from Parquet and checked as ingest checks them (:mod:`~evalstore.scale.import_checks`),
every run given new ids."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from evalstore.db import queries
from evalstore.db.schema import ROW_TABLES, refresh_views, row_table
from evalstore.errors import EvalstoreError, RunExists, SchemaError
from evalstore.ingest.index import index_lists
from evalstore.ingest.write import check_list_ids
from evalstore.runs.registry import check_key_spellings, delete_runs
from evalstore.scale.checksums import NO_CHECKSUMS
from evalstore.scale.export import table_columns
from evalstore.scale.import_checks import (
    check_added_positives,
    check_detections,
    check_distinct_ids,
    check_items,
    check_listed_groups,
    check_logged,
    check_rows,
    check_run_row,
    check_score_type,
    unreadable_stream,
)
from evalstore.scale.layout import (
    ALL_TABLES,
    BATCH_ROWS,
    DETECTION_DERIVED,
    MANIFEST,
    PART,
    locked,
    partition_path,
    recover,
)
from evalstore.scale.verify import check_export, check_folder

if TYPE_CHECKING:
    from evalstore.db.connection import Progress
    from evalstore.store.facade import Store

__all__ = ["import_runs"]


def _rows_table(con: duckdb.DuckDBPyConnection, part: Path) -> str:
    """The row table for an exported run's scores: int items when every item id is the text
    of an int32, f32 scores when every score is a float32 value (else text, f64)."""
    con.register("_import_kinds", _parquet_reader(part, ["item_id", "score"]))
    try:
        int_items, f32 = queries.fetch_rows(con, "export/score_kinds")[0]
    finally:
        with contextlib.suppress(duckdb.Error):  # fails in an aborted transaction
            con.unregister("_import_kinds")
    return row_table(int_items, f32)


def _quoted(names: Sequence[str], allowed: set[str]) -> list[str]:
    return [queries.quote_ident(c, allowed) for c in names]


def _idents(names: Sequence[str], allowed: set[str]) -> str:
    """A {columns} part: the quoted names, comma-separated."""
    return ", ".join(_quoted(names, allowed))


def _parquet_reader(path: Path, columns: Sequence[str] | None = None) -> pa.RecordBatchReader:
    source = pq.ParquetFile(path)
    schema = source.schema_arrow
    if columns is not None:
        schema = pa.schema([schema.field(c) for c in columns])
    return pa.RecordBatchReader.from_batches(
        schema, source.iter_batches(batch_size=BATCH_ROWS, columns=columns)
    )


def import_runs(
    store: Store,
    src_dir: str | os.PathLike[str],
    replace: bool = False,
    progress: Progress | None = None,
    warn: Callable[[str], None] | None = None,
) -> list[str]:
    """Import every run of an export folder into ``store``, all in one transaction.

    The whole folder is checked first (:func:`~evalstore.scale.verify.check_export`: the
    manifest, every file's SHA-256 against the one the manifest records, its columns, types
    and rows, list ids, no links or foreign files). Each run gets a new id in the target
    store; its rows are streamed from Parquet and checked as ingest checks them
    (:mod:`~evalstore.scale.import_checks`: the run's name, params and tags; scores that are
    NaN or +inf, labels other than -1, 0, 1, negative gains, an item or a seq twice in a
    list, n_positives below the list's positives or adding more than ingest's bound beyond
    them, a list without its groups row, a groups row of no list, non-finite match
    coordinates, a match without its pair, counts negative or beyond 2^53 (each, and a
    group's sum); an image or category id twice, a box or detection of an image or category
    the run lacks, a NaN or infinite coordinate, a negative side, a NaN score, a det_id
    out of place, corners other than the box; logged values as ``evalstore log`` checks
    them). Scores must be DOUBLE
    or FLOAT, which the store holds as they are. The first problem stops the import and
    nothing of it stays: a failed, interrupted or killed import leaves the store as it was,
    so it can simply be run again. Cached metric values are not part of an export: run
    ``evalstore eval`` afterwards. A run's ``run_state`` row comes with it; its ``run_steps``
    links come for the step runs imported with it (a step run imported without its run is a
    plain run). A run replaced goes with its step runs, as ``evalstore rm`` removes it.

    Args:
        store: an open, writable store.
        src_dir: a folder written by :func:`export_runs`.
        replace: replace runs of the same EXPERIMENT/NAME in the target (else an error,
            raised before anything is imported).
        progress: called with ("import", runs done, runs total).
        warn: called with a one-line warning: an export of format version 1, whose files
            have no checksums (read unchecked for damage, their rows checked).

    Returns:
        ``EXPERIMENT/NAME`` of each imported run, in the manifest's order.

    Raises:
        RunExists: a run of the same name exists and ``replace`` is false.
        SchemaError: the export is of a newer schema than the store.
        EvalstoreError: a missing or damaged partition, rows that ingest would refuse, or
            columns the store does not have.
    """
    root = Path(src_dir)
    check_folder(root)
    with locked(root, required=False):  # no export swaps folders while we read them
        if any(root.glob(".journal-*.json")):  # an export crashed mid-swap: finish it first
            try:
                recover(root)
            except OSError as exc:
                raise EvalstoreError(
                    f"{root} holds an export interrupted while swapping folders, and it cannot "
                    f"be finished here ({exc.strerror}); export into it again where it is "
                    "writable"
                ) from None
        return _import_all(store, root, replace, progress, warn)


def _import_all(
    store: Store,
    root: Path,
    replace: bool,
    progress: Progress | None,
    warn: Callable[[str], None] | None,
) -> list[str]:
    manifest = check_export(root)  # all of it, before anything is written
    if warn is not None and any("sha256" not in e for e in manifest["runs"]):
        warn(NO_CHECKSUMS.format(where=root / MANIFEST))
    if int(manifest["schema_version"]) > store.schema_version():
        raise SchemaError(
            f"{root} is an export of schema version {manifest['schema_version']}, newer than "
            f"this store ({store.schema_version()}); upgrade evalstore"
        )
    target = {t: {c["name"] for c in table_columns(store.con, t)} for t in ALL_TABLES}
    columns: dict[str, list[str]] = {}
    for table, spec in manifest["tables"].items():
        names = [c["name"] for c in spec["columns"]]
        # an export before schema 15 names a match's pair by its id (import_matches_by_pair_id)
        legacy = {"pair_id"} if table == "matches" and "pair_no" not in names else set()
        unknown = [n for n in names if n not in target[table] | legacy]
        if unknown:
            raise SchemaError(f"{root}: column {table}.{unknown[0]} is not in this store's schema")
        columns[table] = names
    if "scores" in manifest["tables"]:
        check_score_type(root / MANIFEST, manifest["tables"]["scores"]["columns"])
    entries = manifest["runs"]
    for entry in entries:
        key = (entry["experiment"], entry["name"])
        if not replace and queries.fetch_rows(
            store.con, "store/run_by_name", {"experiment": key[0], "name": key[1]}
        ):
            raise RunExists(
                f"run {key[0]}/{key[1]} exists; import with --replace (replace=True) to "
                "overwrite it"
            )
    imported = []
    new_ids: dict[int, int] = {}
    with store.transaction():
        for done, entry in enumerate(entries):
            new_ids[int(entry["run_id"])] = _import_run(store, root, entry, columns, target)
            imported.append(f"{entry['experiment']}/{entry['name']}")
            if progress is not None:
                progress("import", done + 1, len(entries))
        _link_steps(store.con, root, entries, new_ids)
        check_key_spellings(store.con, str(root))
        refresh_views(store.con)
    return imported


def _link_steps(
    con: duckdb.DuckDBPyConnection,
    root: Path,
    entries: Sequence[Mapping[str, Any]],
    new_ids: Mapping[int, int],
) -> None:
    """The run_steps rows of the imported runs, under their new ids: a run is linked to the
    step runs imported with it; a step run imported without its run stays a plain run."""
    old, new = list(new_ids), list(new_ids.values())
    for entry in entries:
        if not int(entry["rows"].get("run_steps", 0)):
            continue
        part = partition_path(root, "run_steps", entry["run_id"]) / PART
        con.register("_import", _parquet_reader(part))
        try:
            queries.run(
                con,
                "export/import_step_links",
                {"run_id": new_ids[int(entry["run_id"])], "old_ids": old, "new_ids": new},
            )
        except duckdb.Error as exc:
            first = str(exc).strip().splitlines()[0]
            raise EvalstoreError(f"{part}: cannot import the steps of a run: {first}") from None
        finally:
            with contextlib.suppress(duckdb.Error):
                con.unregister("_import")


def _import_run(
    store: Store,
    root: Path,
    entry: Mapping[str, Any],
    columns: dict[str, list[str]],
    target: dict[str, set[str]],
) -> int:
    """Import one run's rows inside the caller's transaction; returns its new id."""
    con = store.con
    ref = f"{entry['experiment']}/{entry['name']}"
    rows_table: str | None = None
    existing = queries.fetch_rows(
        con, "store/run_by_name", {"experiment": entry["experiment"], "name": entry["name"]}
    )
    if existing:  # replaced: with its step runs, as rm removes it
        delete_runs(con, [int(existing[0][0])])
    run_id: int | None = None
    first_list_id = queries.fetch_rows(con, "store/next_list_id")[0][0]
    keyed = "list_id" in columns.get("scores", [])  # exports before schema 6 have none
    queries.run(con, "export/no_list_map")  # until the run's scores give one
    for table in ALL_TABLES:  # pairs before matches: a match of an old export names its pair
        expected = int(entry["rows"].get(table, 0))
        if (table != "runs" and expected == 0) or table in DETECTION_DERIVED:
            continue  # detection matches: this store derives them again on first use
        if table == "run_steps":
            continue  # linked when every run has its new id (_link_steps)
        part = partition_path(root, table, entry["run_id"]) / PART
        allowed = target[table]
        try:
            con.register("_import", _parquet_reader(part))
            if table == "runs":
                text = queries.template(
                    "export/import_run_row", columns=_idents(columns[table], allowed)
                )
                got = con.execute(text).fetchall()
                if len(got) != 1:
                    raise EvalstoreError(f"{part}: {len(got)} runs rows; expected 1")
                run_id = int(got[0][0])
                check_run_row(con, part, ref, run_id)
                continue
            if table == "scores":
                # list ids are unique across a store: the run's lists get new ones
                key_columns = ["list_id"] if keyed else ["task", "group_id"]
                con.register("_import_ids", _parquet_reader(part, key_columns))
                mapping = "export/map_list_ids" if keyed else "export/map_group_ids"
                queries.run(con, mapping, {"first": first_list_id})
                con.unregister("_import_ids")
                n_lists = queries.fetch_rows(con, "export/count_mapped_lists")[0][0]
                check_list_ids(first_list_id, n_lists + 1)
                query = "export/import_scores" if keyed else "export/import_scores_by_group"
                if keyed and "gain" in columns["scores"]:  # schema 16 on: graded relevance
                    query = "export/import_scores_gains"
                rows_table = _rows_table(con, part)
                text = queries.template(query, table=queries.quote_ident(rows_table, ROW_TABLES))
            elif table == "groups":
                if keyed:  # before anything of it is inserted: a row of no list is refused
                    con.register("_import_ids", _parquet_reader(part, ["list_id", "group_id"]))
                    try:
                        check_listed_groups(con, part, ref)
                    finally:
                        with contextlib.suppress(duckdb.Error):
                            con.unregister("_import_ids")
                kept = [c for c in columns[table] if c != "list_id"]
                query = "export/import_groups" if keyed else "export/import_groups_by_group"
                text = queries.template(
                    query,
                    columns=_idents(kept, allowed),
                    source_columns=", ".join(
                        queries.template("export/source_column", column=c)
                        for c in _quoted(kept, allowed)
                    ),
                )
            elif table == "pairs" and "pair_no" not in columns[table]:  # before schema 15
                text = queries.template(
                    "export/import_pairs_numbered", columns=_idents(columns[table], allowed)
                )
            elif table == "matches" and "pair_no" not in columns[table]:  # before schema 15
                kept = [c for c in columns[table] if c != "pair_id"]
                text = queries.template(
                    "export/import_matches_by_pair_id",
                    columns=_idents(kept, allowed),
                    source_columns=", ".join(
                        queries.template("export/source_column", column=c)
                        for c in _quoted(kept, allowed)
                    ),
                )
            else:
                check_distinct_ids(con, part, ref, table)  # det_images, det_categories
                text = queries.template(
                    "export/import_rows",
                    table=queries.quote_ident(table, set(ALL_TABLES)),
                    columns=_idents(columns[table], allowed),
                )
            n = con.execute(text, queries.bind(text, {"run_id": run_id})).fetchone()
        except duckdb.Error as exc:
            # a Parquet reader that failed is wrapped by DuckDB with its Python traceback
            damaged = unreadable_stream(part, exc)
            first = str(exc).strip().splitlines()[0]
            raise damaged or EvalstoreError(f"{part}: cannot import run {ref}: {first}") from None
        except (OSError, ValueError, pa.ArrowException) as exc:  # the file, opened to read
            raise unreadable_stream(part, exc) or EvalstoreError(f"{part}: {exc}") from None
        finally:
            with contextlib.suppress(duckdb.Error):
                con.unregister("_import")
        if n is None or int(n[0]) != expected:
            got_n = None if n is None else int(n[0])
            raise EvalstoreError(
                f"{part}: {got_n} rows, the manifest says {expected:,}; the export is damaged"
            )
    if run_id is not None and int(entry["rows"].get("scores", 0)):
        if not keyed:  # an export before schema 6 has groups rows for metadata only
            queries.run(con, "export/add_list_groups", {"run_id": run_id})
        n_lists = queries.fetch_rows(con, "export/count_mapped_lists")[0][0]
        queries.run(con, "store/set_next_list_id", {"next": first_list_id + n_lists})
        if rows_table is not None:
            check_items(con, root, entry, rows_table, run_id, first_list_id, n_lists)
            index_lists(con, rows_table, first_list_id, first_list_id + n_lists)
            check_added_positives(con, root, entry, run_id)
    if run_id is None:  # the runs table is imported first; a missing row fails above
        raise EvalstoreError(f"{root}: no runs row imported for {ref}")
    check_rows(con, root, entry, run_id)
    check_detections(con, root, entry, run_id)
    check_logged(store, root, entry, run_id)
    return run_id
