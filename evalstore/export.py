"""Export runs to Parquet (the layout Spark reads) and import them back into a store.

Layout of an export folder ``DIR``::

    DIR/manifest.json                         schema version, tables and columns, runs
    DIR/<table>/run_id=<id>/part-0.parquet    one folder per (table, run), hive-style

``<table>`` is one of the raw tables (runs, scores, groups, matches, pairs, outcomes); the
``run_id`` column lives only in the folder name, where Spark's partition discovery finds it. A
run without rows in a table has no folder there. DuckDB ENUMs (``task``) and JSON
(``runs.params``) are written as text; lists, maps and every other type keep their Parquet
twin, so an export imports back bit for bit.

Re-exporting a run replaces its folders atomically: every table of the run is written to
``.tmp-*`` folders first (Spark skips names starting with ``.``), then a journal is written and
the folders are swapped by renames, the manifest updated and the old folders removed. A
failure while writing leaves the previous export untouched; a crash during the swap is rolled
forward by the next export into the same folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from evalstore import queries
from evalstore.errors import EvalstoreError, InvalidInput, RunExists, SchemaError

if TYPE_CHECKING:
    from evalstore.runs import RunRef
    from evalstore.store import Progress, Store

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "MANIFEST",
    "TABLES",
    "export_runs",
    "import_runs",
    "partition_path",
    "read_manifest",
]

#: The raw tables, in the order they are written and imported (runs first).
TABLES: tuple[str, ...] = ("runs", "scores", "groups", "matches", "pairs", "outcomes")
#: ``scores`` is a view over the row tables of sql/schema/007_lean_rows.sql: an imported
#: run's ranked items go to the leanest one that holds them exactly (see _rows_table).
FORMAT = "evalstore-export"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
PART = "part-0.parquet"
PARTITION_COLUMN = "run_id"
BATCH_ROWS = 1 << 20
_TEXT_TYPES = ("JSON",)  # exported as VARCHAR, like every ENUM(...)


# -- layout -------------------------------------------------------------------------------


def partition_path(root: str | os.PathLike[str], table: str, run_id: int) -> Path:
    """``root/<table>/run_id=<id>``: the folder of one run's rows of one table."""
    return Path(root) / table / f"{PARTITION_COLUMN}={int(run_id)}"


def _tmp(root: Path, table: str, run_id: int, tag: str) -> Path:
    return root / table / f".tmp-{PARTITION_COLUMN}={run_id}-{tag}"


def _old(root: Path, table: str, run_id: int, tag: str) -> Path:
    return root / table / f".old-{PARTITION_COLUMN}={run_id}-{tag}"


def _journal(root: Path, tag: str) -> Path:
    return root / f".journal-{tag}.json"


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Write JSON atomically: a temporary file next to it, then a rename."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2, ensure_ascii=False)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def read_manifest(root: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest of an export folder.

    Raises:
        EvalstoreError: no manifest, or not an evalstore export of a format this version reads.
    """
    path = Path(root) / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise EvalstoreError(f"{root}: not an evalstore export (no {MANIFEST})") from None
    except (OSError, ValueError) as exc:
        raise EvalstoreError(f"{path}: cannot read the manifest: {exc}") from None
    return check_manifest(manifest, str(path))


def check_manifest(manifest: Any, where: str) -> dict[str, Any]:
    """Check the format fields of a parsed manifest and return it."""
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise EvalstoreError(f"{where}: not an evalstore export manifest")
    version = manifest.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise EvalstoreError(
            f"{where}: export format version {version!r} is newer than this evalstore reads "
            f"({FORMAT_VERSION}); upgrade evalstore"
        )
    for key in ("schema_version", "tables", "runs"):
        if key not in manifest:
            raise EvalstoreError(f"{where}: the manifest has no {key!r}")
    return manifest


# -- columns --------------------------------------------------------------------------------


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> list[dict[str, Any]]:
    """The exported columns of ``table`` (all but run_id): name, exported type, source type."""
    if table not in TABLES:
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
    parts = []
    for c in columns:
        ident = queries.quote_ident(c["name"], allowed)
        parts.append(f"cast({ident} as varchar) as {ident}" if "source_type" in c else ident)
    return ", ".join(parts)


# -- export ---------------------------------------------------------------------------------


@contextlib.contextmanager
def _locked(root: Path, required: bool = True) -> Iterator[None]:
    """One export or import at a time per folder (advisory lock; a no-op without fcntl).
    ``required=False``: a folder where the lock file cannot be created (read-only) is read
    without the lock."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    try:
        fh = open(root / ".evalstore-export.lock", "a+")  # noqa: SIM115 (closed below)
    except OSError:
        if required:
            raise
        yield
        return
    with fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise EvalstoreError(
                f"{root} is being written by another evalstore export; try again later"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _write_partition(
    con: duckdb.DuckDBPyConnection,
    table: str,
    columns: Sequence[Mapping[str, Any]],
    run_id: int,
    folder: Path,
) -> int:
    """Stream one run's rows of ``table`` into ``folder/part-0.parquet``; returns the row
    count (0: nothing is written)."""
    allowed = {c["name"] for c in columns}
    # The table is from TABLES and the columns from the store's catalogue (quote_ident);
    # the run id is bound.
    sql = (
        f"select {_select_list(columns, allowed)} from {queries.quote_ident(table, set(TABLES))}"
        f" where {PARTITION_COLUMN} = $run_id"
    )
    reader = con.sql(sql, params={"run_id": run_id}).to_arrow_reader(BATCH_ROWS)
    rows = 0
    writer: pq.ParquetWriter | None = None
    try:
        for batch in reader:
            if batch.num_rows == 0:
                continue
            if writer is None:
                folder.mkdir(parents=True)
                writer = pq.ParquetWriter(
                    folder / PART, reader.schema, compression="zstd", write_statistics=True
                )
            writer.write_batch(batch)
            rows += batch.num_rows
    finally:
        if writer is not None:
            writer.close()
        reader.close()
    return rows


def _apply(root: Path, journal: Mapping[str, Any]) -> None:
    """Swap the staged folders of a journal into place, write its manifest, remove the old
    folders. Every step checks what is already done, so a crashed swap can be re-applied."""
    tag = journal["tag"]
    for move in journal["moves"]:
        table, run_id, new = move["table"], int(move["run_id"]), bool(move["new"])
        final, tmp, old = (
            partition_path(root, table, run_id),
            _tmp(root, table, run_id, tag),
            _old(root, table, run_id, tag),
        )
        if new and not tmp.exists():
            continue  # swapped before a crash
        if final.exists():
            os.rename(final, old)
        if new:
            os.rename(tmp, final)
    _write_json(root / MANIFEST, journal["manifest"])
    for move in journal["moves"]:
        shutil.rmtree(_old(root, move["table"], int(move["run_id"]), tag), ignore_errors=True)
    _journal(root, tag).unlink(missing_ok=True)


def _recover(root: Path) -> None:
    """Finish swaps a crash interrupted, then remove staging folders left by failed exports."""
    for path in sorted(root.glob(".journal-*.json")):
        try:
            journal = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:  # written atomically, so only a foreign file can be unreadable
            raise EvalstoreError(f"{path}: unreadable export journal; remove it") from None
        _apply(root, journal)
    for table in TABLES:
        folder = root / table
        if folder.is_dir():
            for leftover in [*folder.glob(".tmp-*"), *folder.glob(".old-*")]:
                shutil.rmtree(leftover, ignore_errors=True)


def _new_manifest(store: Store, tables: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    from evalstore import __version__

    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "schema_version": store.schema_version(),
        "evalstore_version": __version__,
        "layout": f"<table>/{PARTITION_COLUMN}=<id>/{PART} ({PARTITION_COLUMN} only in the path)",
        "partition_column": {"name": PARTITION_COLUMN, "type": "INTEGER"},
        "tables": {t: {"columns": cols} for t, cols in tables.items()},
        "runs": [],
    }


def _merge_into(manifest: dict[str, Any], fresh: dict[str, Any], root: Path) -> dict[str, Any]:
    """The manifest of an existing export, ready to take runs of this store: the raw tables
    must have the same columns (a schema change elsewhere, e.g. in metric_values, is fine)."""
    if manifest["tables"] != fresh["tables"]:
        raise EvalstoreError(
            f"{root} holds an export of schema version {manifest['schema_version']} with other "
            f"raw tables or columns than this store's (schema {fresh['schema_version']}); "
            "export into a new folder"
        )
    version = max(int(manifest["schema_version"]), int(fresh["schema_version"]))
    return {**manifest, "schema_version": version}


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
    ingested again with ``--replace``) replaces the older one.

    Args:
        store: an open store (read-only is enough).
        out_dir: the export folder; created when missing. It must be empty or an export
            whose raw tables have the same columns.
        runs: run references; default every run of the store.
        progress: called with ("export", runs done, runs total).

    Returns:
        ``{"dir", "schema_version", "runs": [{"run_id", "experiment", "name", "rows"}],
        "rows": {table: rows written}}``.

    Raises:
        EvalstoreError: the folder holds something else, or raw tables of other columns.
        RunNotFound: an unknown run reference.
    """
    root = Path(out_dir)
    if root.exists() and not root.is_dir():
        raise InvalidInput(f"{root} is a file; --to needs a folder")
    if runs is None:
        wanted = [int(r[0]) for r in queries.fetch_rows(store.con, "export/all_runs")]
    else:
        wanted = list(dict.fromkeys(store.resolve(r) for r in runs))
    tables = {t: _columns(store.con, t) for t in TABLES}
    fresh = _new_manifest(store, tables)
    root.mkdir(parents=True, exist_ok=True)
    totals = dict.fromkeys(TABLES, 0)
    exported: list[dict[str, Any]] = []
    with _locked(root):
        _recover(root)
        if (root / MANIFEST).exists():
            manifest = _merge_into(read_manifest(root), fresh, root)
        else:
            foreign = [p.name for p in root.iterdir() if not p.name.startswith(".")]
            if foreign:
                raise EvalstoreError(
                    f"{root} is not empty and holds no evalstore export ({foreign[0]}, ...); "
                    "export into an empty or new folder"
                )
            manifest = fresh
        names = {
            int(r[0]): (r[1], r[2])
            for r in queries.fetch_rows(store.con, "export/run_names", {"runs": wanted})
        }
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
            for table in TABLES:
                folder = _tmp(root, table, run_id, tag)
                staged.append(folder)
                rows[table] = _write_partition(store.con, table, tables[table], run_id, folder)
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
    }
    kept = [r for r in manifest["runs"] if int(r["run_id"]) not in {run_id, *superseded}]
    new_manifest = {**manifest, "runs": sorted([*kept, entry], key=lambda r: int(r["run_id"]))}
    moves = [{"table": t, "run_id": run_id, "new": rows[t] > 0} for t in TABLES]
    moves += [{"table": t, "run_id": old, "new": False} for old in superseded for t in TABLES]
    journal = {"tag": tag, "moves": moves, "manifest": new_manifest}
    _write_json(_journal(root, tag), journal)
    _apply(root, journal)
    return entry, new_manifest


# -- import ---------------------------------------------------------------------------------


def _rows_table(con: duckdb.DuckDBPyConnection, part: Path) -> str:
    """The row table for an exported run's scores: int items when every item id is the text
    of an int32, f32 scores when every score is a float32 value (else text, f64)."""
    from evalstore.ingest import ROW_TABLES, row_table

    con.register("_import_kinds", _parquet_reader(part, ["item_id", "score"]))
    try:
        int_items, f32 = queries.fetch_rows(con, "export/score_kinds")[0]
    finally:
        with contextlib.suppress(duckdb.Error):  # fails in an aborted transaction
            con.unregister("_import_kinds")
    return queries.quote_ident(row_table(int_items, f32), ROW_TABLES)


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
) -> list[str]:
    """Import every run of an export folder into ``store``, one transaction per run.

    Each run gets a new id in the target store; its rows are streamed from Parquet. Cached
    metric values are not part of an export: run ``evalstore eval`` afterwards.

    Args:
        store: an open, writable store.
        src_dir: a folder written by :func:`export_runs`.
        replace: replace runs of the same EXPERIMENT/NAME in the target (else an error,
            raised before anything is imported).
        progress: called with ("import", runs done, runs total).

    Returns:
        ``EXPERIMENT/NAME`` of each imported run, in the manifest's order.

    Raises:
        RunExists: a run of the same name exists and ``replace`` is false.
        SchemaError: the export is of a newer schema than the store.
        EvalstoreError: a missing or damaged partition, or columns the store does not have.
    """
    root = Path(src_dir)
    with _locked(root, required=False):  # no export swaps folders while we read them
        if any(root.glob(".journal-*.json")):  # an export crashed mid-swap: finish it first
            try:
                _recover(root)
            except OSError as exc:
                raise EvalstoreError(
                    f"{root} holds an export interrupted while swapping folders, and it cannot "
                    f"be finished here ({exc.strerror}); export into it again where it is "
                    "writable"
                ) from None
        return _import_all(store, root, replace, progress)


def _import_all(store: Store, root: Path, replace: bool, progress: Progress | None) -> list[str]:
    manifest = read_manifest(root)
    if int(manifest["schema_version"]) > store.schema_version():
        raise SchemaError(
            f"{root} is an export of schema version {manifest['schema_version']}, newer than "
            f"this store ({store.schema_version()}); upgrade evalstore"
        )
    target = {t: {c["name"] for c in _columns(store.con, t)} for t in TABLES}
    columns: dict[str, list[str]] = {}
    for table, spec in manifest["tables"].items():
        if table not in TABLES:
            raise EvalstoreError(f"{root}: unknown table {table!r} in the manifest")
        names = [c["name"] for c in spec["columns"]]
        unknown = [n for n in names if n not in target[table]]
        if unknown:
            raise SchemaError(f"{root}: column {table}.{unknown[0]} is not in this store's schema")
        columns[table] = names
    entries = manifest["runs"]
    seen: set[tuple[str, str]] = set()
    for entry in entries:
        key = (entry["experiment"], entry["name"])
        if key in seen:
            raise EvalstoreError(f"{root}: run {key[0]}/{key[1]} appears twice in the manifest")
        seen.add(key)
        for table in TABLES:
            n = int(entry["rows"].get(table, 0))
            part = partition_path(root, table, entry["run_id"]) / PART
            if table == "runs" and n != 1:
                raise EvalstoreError(f"{root}: run {key[0]}/{key[1]} has {n} runs rows")
            if n and not part.is_file():
                raise EvalstoreError(f"{part}: missing ({n:,} rows of run {key[0]}/{key[1]})")
        if not replace and queries.fetch_rows(
            store.con, "store/run_by_name", {"experiment": key[0], "name": key[1]}
        ):
            raise RunExists(
                f"run {key[0]}/{key[1]} exists; import with --replace (replace=True) to "
                "overwrite it"
            )
    imported = []
    for done, entry in enumerate(entries):
        _import_run(store, root, entry, columns, target)
        imported.append(f"{entry['experiment']}/{entry['name']}")
        if progress is not None:
            progress("import", done + 1, len(entries))
    return imported


def _import_run(
    store: Store,
    root: Path,
    entry: Mapping[str, Any],
    columns: dict[str, list[str]],
    target: dict[str, set[str]],
) -> int:
    from evalstore.ingest import _check_list_ids
    from evalstore.runs import delete_run_rows
    from evalstore.store import refresh_views

    con = store.con
    ref = f"{entry['experiment']}/{entry['name']}"
    with store.transaction():
        existing = queries.fetch_rows(
            con, "store/run_by_name", {"experiment": entry["experiment"], "name": entry["name"]}
        )
        if existing:
            delete_run_rows(con, int(existing[0][0]))
            queries.run(con, "store/delete_run", {"run_id": int(existing[0][0])})
        run_id: int | None = None
        first_list_id = queries.fetch_rows(con, "store/next_list_id")[0][0]
        keyed = "list_id" in columns.get("scores", [])  # exports before schema 6 have none
        queries.run(con, "export/no_list_map")  # until the run's scores give one
        for table in TABLES:
            expected = int(entry["rows"].get(table, 0))
            if table != "runs" and expected == 0:
                continue
            part = partition_path(root, table, entry["run_id"]) / PART
            cols = ", ".join(queries.quote_ident(c, target[table]) for c in columns[table])
            name = queries.quote_ident(table, set(TABLES))
            con.register("_import", _parquet_reader(part))
            try:
                if table in ("scores", "groups"):
                    # list ids are unique across a store: the run's lists get new ones
                    if table == "scores":
                        key_columns = ["list_id"] if keyed else ["task", "group_id"]
                        con.register("_import_ids", _parquet_reader(part, key_columns))
                        mapping = "export/map_list_ids" if keyed else "export/map_group_ids"
                        queries.run(con, mapping, {"first": first_list_id})
                        con.unregister("_import_ids")
                        n_lists = queries.fetch_rows(con, "export/count_mapped_lists")[0][0]
                        _check_list_ids(first_list_id, n_lists + 1)
                    source = "_import i left join _list_map m on " + (
                        "m.old_id = i.list_id"
                        if keyed
                        else "m.task = i.task and m.group_id is not distinct from i.group_id"
                    )
                    if table == "scores":
                        name = _rows_table(con, part)
                        into, cols_in = (
                            "list_id, item, score, label, seq",
                            ("m.new_id, i.item_id, i.score, i.label, i.seq"),
                        )
                    else:
                        kept = [c for c in columns[table] if c != "list_id"]
                        into = ", ".join(
                            [queries.quote_ident(c, target[table]) for c in kept] + ["list_id"]
                        )
                        cols_in = ", ".join(
                            ["i." + queries.quote_ident(c, target[table]) for c in kept]
                            + ["m.new_id"]
                        )
                        into = f"{PARTITION_COLUMN}, {into}"
                        cols_in = f"$run_id, {cols_in}"
                else:
                    into = f"{PARTITION_COLUMN}, {cols}"
                    cols_in, source = f"$run_id, {cols}", "_import"
                if table == "runs":
                    got = con.execute(
                        f"insert into {name} ({cols}) select {cols} from _import "
                        f"returning {PARTITION_COLUMN}"
                    ).fetchall()
                    if len(got) != 1:
                        raise EvalstoreError(f"{part}: {len(got)} runs rows; expected 1")
                    run_id = int(got[0][0])
                    continue
                text = f"insert into {name} ({into}) select {cols_in} from {source}"
                n = con.execute(text, queries.bind(text, {"run_id": run_id})).fetchone()
            except duckdb.Error as exc:
                first = str(exc).strip().splitlines()[0]
                raise EvalstoreError(f"{part}: cannot import run {ref}: {first}") from None
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
        refresh_views(con)
    if run_id is None:  # the runs table is imported first; a missing row fails above
        raise EvalstoreError(f"{root}: no runs row imported for {ref}")
    return run_id
