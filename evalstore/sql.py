"""Users' own SQL: run a query on a read-only connection, write the result."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import polars as pl

from evalstore import queries, render
from evalstore.errors import EvalstoreError, InvalidInput
from evalstore.runs import parse_params

if TYPE_CHECKING:
    from evalstore.store import Store

__all__ = ["run_sql", "write_result"]


def run_sql(store: Store, query: str, params: Sequence[str] | None = None) -> pl.DataFrame:
    """Run ``query`` with ``$name`` parameters (``["name=value", ...]``) and fetch it all.

    Raises:
        InvalidInput: the query fails (syntax, unknown column, a write on the read-only
            database...): the first line of DuckDB's message.
    """
    values = parse_params(params)
    try:
        return store.con.sql(query, params=queries.bind(query, values) if values else None).pl()
    except duckdb.Error as exc:
        first = str(exc).strip().splitlines()[0]
        if "read-only" in first or "read only" in first:
            raise InvalidInput(f"the database is opened read-only here: {first}") from None
        raise InvalidInput(f"SQL error: {first}") from None
    except AttributeError:
        # a statement without a result (e.g. SET): nothing to show
        return pl.DataFrame()


def write_result(frame: pl.DataFrame, fmt: str, path: Path | None) -> Path:
    """Write ``frame`` to ``path`` as parquet, csv, json, md or table text."""
    if path is None:
        raise InvalidInput("--format parquet needs --output FILE")
    try:
        if fmt == "parquet" or path.suffix == ".parquet":
            frame.write_parquet(path)
        else:
            path.write_text(render.to_text(frame, "csv" if fmt == "table" else fmt) + "\n")
    except OSError as exc:
        raise EvalstoreError(f"cannot write {path}: {exc.strerror}") from None
    return path
