"""evalstore sql: users' own queries on a read-only connection."""

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
        str, typer.Option("--format", "-f", help="table | csv | json | md | latex | parquet.")
    ] = "table",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file (parquet needs it).")
    ] = None,
    db: DbOpt = None,
    lock_timeout: LockOpt = 10.0,
) -> None:
    """Run any SQL query on a read-only connection (views: v_runs, v_metrics, v_lists)."""
    from evalstore.sql import run_sql, write_result
    from evalstore.store import Store

    with Store(db, read_only=True, lock_timeout=lock_timeout) as store:
        frame = run_sql(store, query, param)
    if output is not None or fmt == "parquet":
        path = write_result(frame, fmt, output)
        err.print(f"wrote {frame.height:,} rows to {path}", markup=False)
    elif fmt in ("table", "json", "csv", "md", "latex"):
        emit(frame, Fmt(fmt))
    else:
        raise EvalstoreError(
            f"unknown --format {fmt!r}; use table, csv, json, md, latex or parquet"
        )
