"""Users' own SQL: run a query in the sandbox of a read-only store, write the result."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from evalstore import queries, render, sandbox
from evalstore.errors import EvalstoreError, InvalidInput
from evalstore.runs import parse_params

if TYPE_CHECKING:
    import polars as pl

    from evalstore.store import Store

__all__ = ["run_sql", "write_result"]


def run_sql(
    store: Store,
    query: str,
    params: Sequence[str] | None = None,
    *,
    allow_read: Sequence[str | Path] = (),
    max_rows: int = sandbox.DEFAULT_MAX_ROWS,
    timeout: float | None = sandbox.DEFAULT_TIMEOUT,
) -> sandbox.Result:
    """Run ``query`` with ``$name`` parameters (``["name=value", ...]``) in the sandbox
    (:mod:`evalstore.sandbox`): the store's database instance is locked down first, for good,
    so ``store`` serves user queries from then on.

    Raises:
        InvalidInput: the query is refused (several statements, not read-only, a file it may
            not read), fails (syntax, unknown column...) or runs past ``timeout``: one line.
    """
    values = parse_params(params)
    sandbox.lock_down(store.con, allow_read)
    return sandbox.run_query(
        store.con,
        query,
        queries.bind(query, values) if values else None,
        max_rows=max_rows,
        timeout=timeout,
    )


def write_result(frame: pl.DataFrame, fmt: str, path: Path | None) -> Path:
    """Write ``frame`` to ``path`` as parquet, csv, tsv, json, nl, md, latex or (table)
    csv."""
    if path is None:
        raise InvalidInput("--format parquet needs --output FILE")
    try:
        if fmt == "parquet" or path.suffix == ".parquet":
            frame.write_parquet(path)
        elif fmt == "latex":
            path.write_text(render.latex_table(frame, None, None) + "\n")
        else:
            path.write_text(render.to_text(frame, "csv" if fmt == "table" else fmt) + "\n")
    except OSError as exc:
        raise EvalstoreError(f"cannot write {path}: {exc.strerror}") from None
    return path
