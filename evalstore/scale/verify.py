"""The checks of an export folder that an import makes before it writes anything.

:func:`check_export` reads what an import will read and refuses, with one line naming the file
and what is wrong, an export that is not as :func:`~evalstore.scale.export.export_runs` wrote
it: a manifest whose fields are not of their kinds or whose counts are not the files'; a file
whose SHA-256 is not the one its manifest records (checked before the file is parsed;
:mod:`~evalstore.scale.checksums`); a partition missing, of a run or table the manifest does
not list, or not readable as Parquet; columns of other names, order or types than the
manifest says; a runs row of another run; a scores list id without a groups row of its run
(or in two); a symbolic link, a special file or a name an export does not write anywhere in
the folder. Only the footers of the files and the columns ``list_id``, ``experiment`` and
``name`` are read here; the rows themselves are checked as ingest checks them while they are
imported (:mod:`~evalstore.scale.import_checks`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeGuard

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from evalstore.errors import EvalstoreError
from evalstore.scale.checksums import check_file, checksums_of
from evalstore.scale.layout import (
    ALL_TABLES,
    BATCH_ROWS,
    MANIFEST,
    PART,
    PARTITION_COLUMN,
    is_leftover,
    partition_path,
    partition_run_id,
    read_manifest,
)

__all__ = ["check_export", "check_folder", "parquet_type", "scan"]

_DAMAGED = "the export is damaged, nothing was imported"
_NONE = np.empty(0, dtype=np.int64)


def check_folder(root: Path) -> None:
    """Refuse a path that is not an existing folder."""
    if not root.exists():
        raise EvalstoreError(f"{root}: no such folder")
    if not root.is_dir():
        raise EvalstoreError(f"{root} is a file, not an export folder")


def check_export(root: Path) -> dict[str, Any]:
    """Check an export folder completely (module docstring) and return its manifest.

    Raises:
        EvalstoreError: the first problem found, naming the file.
    """
    manifest = read_manifest(root)
    where = root / MANIFEST
    columns = _check_tables(manifest["tables"], where)
    entries = _check_runs(manifest["runs"], columns, where)
    found = scan(root)
    counts = {
        (table, int(e["run_id"])): int(e["rows"].get(table, 0))
        for e in entries
        for table in ALL_TABLES
    }
    for (table, run_id), part in found.items():
        if (table, run_id) not in counts:
            raise EvalstoreError(f"{part}: a run id that is not in {where}; {_DAMAGED}")
        if counts[(table, run_id)] == 0:
            raise EvalstoreError(f"{part}: a partition that {where} says has no rows; {_DAMAGED}")
    keyed = "list_id" in columns.get("scores", {})  # exports before schema 6 have none
    for entry in entries:
        run_id, ref = int(entry["run_id"]), f"{entry['experiment']}/{entry['name']}"
        sums = checksums_of(entry, manifest["format_version"], str(where))
        for table in ALL_TABLES:
            n = counts[(table, run_id)]
            if n:
                if (table, run_id) not in found:
                    missing = partition_path(root, table, run_id) / PART
                    raise EvalstoreError(
                        f"{missing}: missing ({n:,} rows of run {ref}); {_DAMAGED}"
                    )
                if sums is not None:  # before the file is parsed: a damaged one never is
                    check_file(found[(table, run_id)], sums[table])
                _check_partition(found[(table, run_id)], columns[table], n)
        _check_run_row(found[("runs", run_id)], entry)
        if keyed and counts[("scores", run_id)]:
            _check_lists(found[("scores", run_id)], found.get(("groups", run_id)), ref)
    return manifest


def _check_tables(tables: Any, where: Path) -> dict[str, dict[str, str]]:
    """The manifest's tables: table -> {column: type}, each checked to be of its kind."""
    if not isinstance(tables, dict) or "runs" not in tables:
        raise EvalstoreError(f"{where}: 'tables' is not an object with the runs table")
    out: dict[str, dict[str, str]] = {}
    for table, spec in tables.items():
        if table not in ALL_TABLES:
            raise EvalstoreError(f"{where}: unknown table {table!r} in the manifest")
        specs = spec.get("columns") if isinstance(spec, dict) else None
        if not isinstance(specs, list) or not all(
            isinstance(c, dict) and all(isinstance(c.get(k), str) for k in ("name", "type"))
            for c in specs
        ):
            raise EvalstoreError(f"{where}: the columns of table {table} are not names and types")
        out[table] = {c["name"]: c["type"] for c in specs}
        if len(out[table]) != len(specs):
            raise EvalstoreError(f"{where}: table {table} lists a column twice")
    if not {"experiment", "name"} <= set(out["runs"]):
        raise EvalstoreError(f"{where}: the runs table has no experiment or no name column")
    if (
        "scores" in out
        and "groups" in out
        and ("list_id" in out["scores"]) != ("list_id" in out["groups"])
    ):
        raise EvalstoreError(f"{where}: list_id is a column of one of scores and groups only")
    return out


def _check_runs(runs: Any, columns: Mapping[str, Any], where: Path) -> list[dict[str, Any]]:
    """The manifest's runs, each checked: an id, names, a count per table."""
    if not isinstance(runs, list):
        raise EvalstoreError(f"{where}: 'runs' is not a list")
    ids: set[int] = set()
    names: set[tuple[str, str]] = set()
    for entry in runs:
        if not (
            isinstance(entry, dict)
            and _is_int(entry.get("run_id"))
            and isinstance(entry.get("experiment"), str)
            and isinstance(entry.get("name"), str)
            and isinstance(entry.get("rows"), dict)
        ):
            raise EvalstoreError(
                f"{where}: a run {entry!r:.60} has no run_id, experiment, name or rows"
            )
        ref = f"{entry['experiment']}/{entry['name']}"
        for table, n in entry["rows"].items():
            if table not in ALL_TABLES or not _is_int(n) or n < 0:
                raise EvalstoreError(f"{where}: run {ref}: {table!r}: {n!r} is not a row count")
            if n and table not in columns:
                raise EvalstoreError(f"{where}: run {ref} has {table} rows, a table it lacks")
        if entry["rows"].get("runs") != 1:
            raise EvalstoreError(f"{where}: run {ref} has {entry['rows'].get('runs')} runs rows")
        if entry["run_id"] in ids or (entry["experiment"], entry["name"]) in names:
            raise EvalstoreError(f"{where}: run {ref} (id {entry['run_id']}) appears twice")
        ids.add(entry["run_id"])
        names.add((entry["experiment"], entry["name"]))
    return runs


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


# -- partitions -------------------------------------------------------------------------------

_ARROW_NAMES = {
    "bool": "BOOLEAN",
    "int8": "TINYINT",
    "int16": "SMALLINT",
    "int32": "INTEGER",
    "int64": "BIGINT",
    "uint8": "UTINYINT",
    "uint16": "USMALLINT",
    "uint32": "UINTEGER",
    "uint64": "UBIGINT",
    "float": "FLOAT",
    "double": "DOUBLE",
    "date32[day]": "DATE",
    "string": "VARCHAR",
    "large_string": "VARCHAR",
    "string_view": "VARCHAR",
}


def parquet_type(dtype: pa.DataType) -> str:
    """The DuckDB type that the manifest names for a column read as ``dtype`` (texts of any
    Arrow width are VARCHAR, lists of any width ``T[]``)."""
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype) or pa.types.is_list_view(dtype):
        return f"{parquet_type(dtype.value_type)}[]"
    if pa.types.is_map(dtype):
        return f"MAP({parquet_type(dtype.key_type)}, {parquet_type(dtype.item_type)})"
    if pa.types.is_timestamp(dtype):
        return "TIMESTAMP" if dtype.tz is None else "TIMESTAMP WITH TIME ZONE"
    return _ARROW_NAMES.get(str(dtype), str(dtype))


def _spelt(duckdb_type: str) -> str:
    return re.sub(r"\s*,\s*", ", ", " ".join(duckdb_type.upper().split()))


def _unreadable(part: Path, exc: Exception) -> EvalstoreError:
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return EvalstoreError(f"{part}: not a readable Parquet file ({first}); {_DAMAGED}")


def _check_partition(part: Path, columns: Mapping[str, str], n: int) -> None:
    """One file's footer against the manifest: column names in order, their types, rows."""
    try:
        with pq.ParquetFile(part) as source:
            schema, rows = source.schema_arrow, source.metadata.num_rows
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise _unreadable(part, exc) from None
    if schema.names != list(columns):
        missing = [c for c in columns if c not in schema.names]
        extra = [c for c in schema.names if c not in columns]
        what = (
            f"no column {missing[0]!r}"
            if missing
            else f"a column {extra[0]!r} the manifest does not list"
            if extra
            else "its columns in another order than the manifest's"
        )
        raise EvalstoreError(f"{part}: {what}; {_DAMAGED}")
    for field in schema:
        have, want = parquet_type(field.type), columns[field.name]
        if have != _spelt(want):
            raise EvalstoreError(
                f"{part}: column {field.name!r} is {have} ({field.type}), the manifest says "
                f"{want}; {_DAMAGED}"
            )
    if rows != n:
        raise EvalstoreError(f"{part}: {rows:,} rows, the manifest says {n:,}; {_DAMAGED}")


def _check_run_row(part: Path, entry: Mapping[str, Any]) -> None:
    try:
        got = pq.read_table(part, columns=["experiment", "name"]).to_pylist()
    except (OSError, ValueError, pa.ArrowException) as exc:  # ValueError: text not UTF-8
        raise _unreadable(part, exc) from None
    if got != [{"experiment": entry["experiment"], "name": entry["name"]}]:
        row = got[0] if got else {}
        raise EvalstoreError(
            f"{part}: the runs row is {row.get('experiment')}/{row.get('name')}, the manifest "
            f"says {entry['experiment']}/{entry['name']}; {_DAMAGED}"
        )


def _list_ids(part: Path) -> tuple[list[np.ndarray], int]:
    """The list ids of a partition, batch by batch (each batch's distinct ones), and how many
    rows have none."""
    chunks, nulls = [], 0
    try:
        with pq.ParquetFile(part) as source:
            for batch in source.iter_batches(batch_size=BATCH_ROWS, columns=["list_id"]):
                column = batch.column(0)
                nulls += column.null_count
                chunks.append(column.drop_null().to_numpy())
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise _unreadable(part, exc) from None
    return chunks, nulls


def _check_lists(scores: Path, groups: Path | None, ref: str) -> None:
    """Every list of the run's scores has exactly one groups row of the run."""
    chunks, nulls = _list_ids(scores)
    if nulls:
        raise EvalstoreError(f"{scores}: run {ref}: {nulls:,} rows without a list id; {_DAMAGED}")
    listed = np.concatenate(_list_ids(groups)[0] or [_NONE]) if groups else _NONE
    distinct, times = np.unique(listed, return_counts=True)
    if (times > 1).any():
        twice = int(distinct[times > 1][0])
        raise EvalstoreError(f"{groups}: run {ref}: list id {twice} in two groups rows; {_DAMAGED}")
    used = np.unique(np.concatenate([np.unique(c) for c in chunks] or [_NONE]))
    unlisted = np.setdiff1d(used, distinct)
    if unlisted.size:
        where = f"in {groups}" if groups else "(the run has no groups partition)"
        raise EvalstoreError(
            f"{scores}: run {ref}: list id {int(unlisted[0])} ({unlisted.size:,} in all) has no "
            f"groups row {where}; {_DAMAGED}"
        )


# -- the folder -------------------------------------------------------------------------------


def scan(root: Path) -> dict[tuple[str, int], Path]:
    """The Parquet files of an export folder by (table, run id), every entry checked.

    Raises:
        EvalstoreError: a symbolic link or a special file anywhere, a name an export does not
            write, a partition folder without its file; the message names the path.
    """
    found: dict[tuple[str, int], Path] = {}
    for table_dir in _entries(root, files={MANIFEST}, folders=set(ALL_TABLES)):
        for part_dir in _entries(table_dir, files=set(), folders=None):
            run_id = partition_run_id(part_dir.name)
            if run_id is None:
                raise _unknown(part_dir, f"{PARTITION_COLUMN}=<id> folders")
            _entries(part_dir, files={PART}, folders=set())
            if not (part_dir / PART).is_file():
                raise EvalstoreError(f"{part_dir}: a partition folder without {PART}")
            found[(table_dir.name, run_id)] = part_dir / PART
    return found


def _entries(folder: Path, files: set[str], folders: set[str] | None) -> list[Path]:
    """The sub-folders of ``folder`` that are data (any name when ``folders`` is None),
    checking that every entry is a regular file of ``files``, such a folder or a leftover."""
    data = []
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        raise EvalstoreError(f"{folder}: cannot read ({exc.strerror or exc})") from None
    for entry in entries:
        path = Path(entry.path)
        _check_entry(entry)
        if is_leftover(folder, entry.name):
            if entry.is_dir(follow_symlinks=False):
                _check_tree(path)
            continue
        if entry.is_dir(follow_symlinks=False) and (folders is None or entry.name in folders):
            data.append(path)
        elif not (entry.is_file(follow_symlinks=False) and entry.name in files):
            expected = ", ".join(sorted(files | (folders or set()))) or "run_id=<id> folders"
            raise _unknown(path, expected)
    return data


def _unknown(path: Path, expected: str) -> EvalstoreError:
    return EvalstoreError(
        f"{path}: not a file of an evalstore export (here: {expected} only); nothing was imported"
    )


def _check_entry(entry: os.DirEntry[str]) -> None:
    if entry.is_symlink():
        raise EvalstoreError(
            f"{entry.path}: a symbolic link (to {os.readlink(entry.path)}); an export holds "
            "regular files only, nothing was imported"
        )
    if not (entry.is_file(follow_symlinks=False) or entry.is_dir(follow_symlinks=False)):
        raise EvalstoreError(f"{entry.path}: not a regular file or folder; nothing was imported")


def _check_tree(folder: Path) -> None:
    """No symbolic link or special file in a leftover folder either."""
    with os.scandir(folder) as entries:  # closed when a check raises (else a ResourceWarning)
        for sub in entries:
            _check_entry(sub)
            if sub.is_dir(follow_symlinks=False):
                _check_tree(Path(sub.path))
