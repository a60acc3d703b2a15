"""evalstore sql: users' own queries, in the sandbox of a read-only store."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalstore.cli.common import (
    DbOpt,
    Fmt,
    LockOpt,
    command,
    emit,
    emit_rows,
    err,
)
from evalstore.errors import EvalstoreError


@command("sql")
def sql_cmd(
    query: Annotated[str, typer.Argument(help="A SQL query (the database is opened read-only).")],
    param: Annotated[
        list[str] | None,
        typer.Option("--param", "-p", help="Bind $name: name=value (JSON values stay typed)."),
    ] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format", "-f", help="table | csv | tsv | json | nl | md | latex | parquet."
        ),
    ] = "table",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file (parquet needs it).")
    ] = None,
    allow_read: Annotated[
        list[Path] | None,
        typer.Option(
            "--allow-read",
            help="Let the query read this file or folder (read_csv, read_parquet...); "
            "repeatable. Nothing else outside the store can be read.",
        ),
    ] = None,
    max_rows: Annotated[
        int, typer.Option("--max-rows", min=1, help="Fetch at most this many rows.")
    ] = 1_000_000,
    timeout: Annotated[
        float, typer.Option("--timeout", min=0.001, help="Stop the query after these seconds.")
    ] = 300.0,
    max_mb: Annotated[
        float,
        typer.Option(
            "--max-mb",
            min=0.000001,
            help="Show at most about this many MB of rows (no cap on an --output file).",
        ),
    ] = 100.0,
    db: DbOpt = None,
    lock_timeout: LockOpt = 60.0,
) -> None:
    """Run one read-only SQL query on the store (views: v_runs, v_metrics, v_lists,
    v_confusion, ...).

    The query runs in a sandbox: one statement, read-only (SELECT, WITH, DESCRIBE, SHOW,
    SUMMARIZE, EXPLAIN), no file, folder, URL or other database but the store unless
    --allow-read names it, settings locked, at most --max-rows rows and --timeout seconds.
    The rows shown on screen stop at about --max-mb MB; an --output file gets them all (up
    to --max-rows). The output file may not be one the command reads (the store, its WAL,
    a file under --allow-read).
    """
    from evalstore.db import sandbox
    from evalstore.db.connection import Database
    from evalstore.store.user_sql import check_output, run_sql_rows, write_result

    to_file = output is not None or fmt == "parquet"
    shown = None if to_file else next((f for f in Fmt if f.value == fmt), None)
    # a result of plain types comes as Python rows for these formats: no polars, no pyarrow
    kinds = _KINDS.get(shown.value) if shown is not None else None
    with Database(db, read_only=True, lock_timeout=lock_timeout) as store:
        if output is not None:
            check_output(output, store.path, allow_read or ())
        result = run_sql_rows(
            store,
            query,
            param,
            allow_read=allow_read or (),
            max_rows=max_rows,
            timeout=timeout,
            max_bytes=None if to_file else round(max_mb * 1e6),
            kinds=kinds or frozenset(),
        )
    if isinstance(result, sandbox.Rows):  # only for a format shown (kinds)
        if result.truncated:
            note = f"the first {len(result.rows):,} rows only (--max-rows to fetch more)"
            err.print(f"note: {note}", markup=False)
        numeric = [t in _NUMERIC for t in result.types]
        emit_rows(result.columns, result.rows, shown or Fmt.table, numeric)
        return
    frame = result.frame
    if result.truncated:
        note = result.note("--max-rows to fetch more", "--max-mb to show more, or --output FILE")
        err.print(f"note: {note}", markup=False)
    if to_file:
        path = write_result(frame, fmt, output)
        err.print(f"wrote {frame.height:,} rows to {path}", markup=False)
    elif shown is not None:
        emit(frame, shown)
    else:
        raise EvalstoreError(
            f"unknown --format {fmt!r}; use {', '.join(f.value for f in Fmt)} or parquet"
        )


#: DuckDB's numeric types (polars' numeric dtypes of their columns: right-aligned)
_NUMERIC = frozenset(
    {"tinyint", "smallint", "integer", "bigint", "utinyint", "usmallint", "uinteger", "ubigint",
     "float", "double"}
)  # fmt: skip
_CSV = frozenset(
    {"boolean", "tinyint", "smallint", "integer", "bigint", "utinyint", "usmallint", "uinteger",
     "ubigint", "varchar"}
)  # fmt: skip
_ALL = frozenset({*_NUMERIC, *_CSV, "date", "timestamp"})
#: per format printed from Python rows, the DuckDB types it prints as from a frame
_KINDS = {"table": _ALL, "json": _ALL, "nl": _ALL, "md": _ALL, "csv": _CSV, "tsv": _CSV}
