"""Users' own SQL: run a query in the sandbox of a read-only store, write the result."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from evalstore import render
from evalstore.db import queries, sandbox
from evalstore.errors import EvalstoreError, InvalidInput
from evalstore.runs.registry import parse_params

if TYPE_CHECKING:
    import polars as pl

    from evalstore.db.connection import Database
    from evalstore.store.facade import Store

__all__ = ["check_output", "run_sql", "run_sql_rows", "write_result"]


def run_sql(
    store: Store,
    query: str,
    params: Sequence[str] | None = None,
    *,
    allow_read: Sequence[str | Path] = (),
    max_rows: int = sandbox.DEFAULT_MAX_ROWS,
    timeout: float | None = sandbox.DEFAULT_TIMEOUT,
    max_bytes: int | None = None,
    timeout_hint: str = "--timeout SECONDS to allow longer",
    read_hint: str = sandbox.READ_HINT,
) -> sandbox.Result:
    """Run ``query`` with ``$name`` parameters (``["name=value", ...]``) in the sandbox
    (:mod:`evalstore.db.sandbox`): the store's database instance is locked down first, for good,
    so ``store`` serves user queries from then on. ``max_bytes``: fetch about that many bytes
    at most (None: no cap, for a file the user asked for).

    Raises:
        InvalidInput: the query is refused (several statements, not read-only, a file it may
            not read), fails (syntax, unknown column...) or runs past ``timeout``: one line.
    """
    return sandbox.run_query(
        store.con,
        query,
        _locked_down(store, query, params, allow_read),
        max_rows=max_rows,
        timeout=timeout,
        max_bytes=max_bytes,
        timeout_hint=timeout_hint,
        read_hint=read_hint,
    )


def run_sql_rows(
    store: Database,
    query: str,
    params: Sequence[str] | None = None,
    *,
    allow_read: Sequence[str | Path] = (),
    max_rows: int = sandbox.DEFAULT_MAX_ROWS,
    timeout: float | None = sandbox.DEFAULT_TIMEOUT,
    max_bytes: int | None = None,
    kinds: frozenset[str] = sandbox.PLAIN_TYPES,
) -> sandbox.Rows | sandbox.Result:
    """:func:`run_sql`'s result as Python rows where :func:`evalstore.db.sandbox.run_rows`
    gives them (a result of plain types, well within ``max_bytes``), without importing polars
    or pyarrow; else (and for no ``kinds``) run_sql's :class:`~evalstore.db.sandbox.Result`.
    Raises as run_sql."""
    bound = _locked_down(store, query, params, allow_read)
    small = sandbox.run_rows(store.con, query, bound, max_rows=max_rows, timeout=timeout,
                             max_bytes=max_bytes, kinds=kinds) if kinds else None  # fmt: skip
    if small is not None:
        return small
    return sandbox.run_query(store.con, query, bound, max_rows=max_rows, timeout=timeout,
                             max_bytes=max_bytes)  # fmt: skip


def _locked_down(
    store: Database, query: str, params: Sequence[str] | None, allow_read: Sequence[str | Path]
) -> dict[str, object] | None:
    """Lock the store's database instance down for good (:func:`evalstore.db.sandbox.
    lock_down`) and give the query's bound ``$name`` parameters (None: none given)."""
    values = parse_params(params)
    sandbox.lock_down(store.con, allow_read)
    return queries.bind(query, values) if values else None


def check_output(path: Path, store: Path, allow_read: Iterable[str | Path] = ()) -> None:
    """Refuse an output file that the command reads: the store, its WAL, or a file under
    ``allow_read`` (the only files a query can read), however it is named (a relative or
    ``..`` path, a symbolic link, a hard link of an existing file).

    Raises:
        InvalidInput: naming the output and what it is.
    """
    out = _resolved(path)
    read: list[tuple[Path, str]] = [
        (_resolved(store), "the store"),
        (_resolved(store.with_name(store.name + ".wal")), "the store's WAL"),
    ]
    read += [(_resolved(Path(p).expanduser()), f"read by --allow-read {p}") for p in allow_read]
    for target, what in read:
        if out == target or (target.is_dir() and out.is_relative_to(target)):
            raise InvalidInput(f"--output {path}: {what}; write the result elsewhere")
    if not out.is_file():
        return
    same = _same_file(out, [t for t, _ in read])
    if same is not None:
        raise InvalidInput(
            f"--output {path}: the same file as {same} (a hard link), which this command "
            "reads; write the result elsewhere"
        )


def _resolved(path: Path) -> Path:
    return Path(os.path.realpath(path.expanduser()))


def _same_file(out: Path, read: list[Path]) -> Path | None:
    """The file of ``read`` (or inside a folder of it) that is ``out`` by another name."""
    stat = out.stat()
    if stat.st_nlink < 2:  # no other name
        return None
    for target in read:
        candidates = target.rglob("*") if target.is_dir() else [target]
        for candidate in candidates:
            try:
                if candidate.is_file() and os.path.samefile(candidate, out):
                    return candidate
            except OSError:
                continue
    return None


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
