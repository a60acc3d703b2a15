"""The sandbox of SQL that users supply (``evalstore sql``, dashboard specs' ``sql``).

:func:`lock_down` turns a DuckDB database instance into a sandbox, for good: external access
off (no file, folder, URL or other database but the store itself, no extension loaded or
installed) except the files and folders the user named with ``--allow-read``, and the
configuration locked, so that no statement can turn it back on. :func:`check_query` accepts
one read-only statement (a SELECT, in any of its forms: ``WITH``, ``FROM``, ``DESCRIBE``,
``SHOW``, ``SUMMARIZE``, ``VALUES``; ``EXPLAIN``; ``CALL`` of a table function) and refuses
anything else, before it runs. :func:`run_query` runs it inside a transaction that is rolled
back, stopped after ``timeout`` seconds, fetching at most ``max_rows`` rows.

Everything that writes (``ATTACH``, ``COPY``, ``EXPORT``, ``INSERT``, ``SET``...) is refused
by the statement check, and reads of anything but the store by DuckDB's own
``enable_external_access = false``: two independent locks (``tests/test_sandbox.py`` tries
each way out).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from evalstore.errors import InvalidInput

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "DEFAULT_MAX_ROWS",
    "DEFAULT_TIMEOUT",
    "Result",
    "check_query",
    "is_locked",
    "lock_down",
    "run_query",
]

#: rows fetched at most by default (``--max-rows``)
DEFAULT_MAX_ROWS = 1_000_000
#: seconds a query may run by default (``--timeout``)
DEFAULT_TIMEOUT = 300.0
_READ_ONLY = frozenset(
    {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN, duckdb.StatementType.CALL}
)
_FILE = re.compile(r'Cannot access (?:file|directory) "([^"]*)"')


@dataclass(frozen=True)
class Result:
    """A query's rows (at most ``max_rows``) and whether more were left out."""

    frame: pl.DataFrame
    truncated: bool


def is_locked(con: duckdb.DuckDBPyConnection) -> bool:
    rows = con.execute("select current_setting('lock_configuration')").fetchall()
    return bool(rows[0][0])


def lock_down(con: duckdb.DuckDBPyConnection, allow_read: Sequence[str | Path] = ()) -> None:
    """Make the database instance of ``con`` a sandbox (every connection to it, for the rest
    of its life): only the store and the ``allow_read`` files and folders (which must exist)
    can be read, nothing outside the store written, no setting changed.

    Raises:
        InvalidInput: a path of ``allow_read`` does not exist, or the instance is already
            locked with other paths.
    """
    files: list[str] = []
    folders: list[str] = []
    for raw in allow_read:
        path = Path(raw).expanduser()
        try:
            path = path.resolve(strict=True)
        except (OSError, RuntimeError):
            raise InvalidInput(f"--allow-read {raw}: no such file or folder") from None
        (folders if path.is_dir() else files).append(str(path))
    if is_locked(con):
        if files or folders:
            raise InvalidInput("--allow-read: this connection is already a sandbox")
        return
    if files:
        con.execute("set allowed_paths = $paths", {"paths": files})
    if folders:
        con.execute("set allowed_directories = $dirs", {"dirs": [f"{d}/" for d in folders]})
    con.execute("set enable_external_access = false")
    con.execute("set lock_configuration = true")


def check_query(con: duckdb.DuckDBPyConnection, text: str, where: str | None = None) -> None:
    """Refuse, before it runs, anything but one read-only statement.

    Raises:
        InvalidInput: it does not parse, holds no statement or several, or is not read-only.
    """
    at = f"{where}: " if where else ""
    try:
        statements = con.extract_statements(text)
    except duckdb.Error as exc:
        raise InvalidInput(f"{at}SQL error: {_first_line(exc)}") from None
    if not statements:
        raise InvalidInput(f"{at}no statement to run")
    if len(statements) > 1:
        raise InvalidInput(
            f"{at}one statement at a time, found {len(statements)} (separated by ';')"
        )
    kind = statements[0].type
    if kind not in _READ_ONLY:
        raise InvalidInput(
            f"{at}only a read-only query runs here (SELECT, WITH, FROM, DESCRIBE, SHOW, "
            f"SUMMARIZE, EXPLAIN, CALL), not {kind.name}"
        )


def run_query(
    con: duckdb.DuckDBPyConnection,
    text: str,
    params: Mapping[str, Any] | None = None,
    *,
    max_rows: int = DEFAULT_MAX_ROWS,
    timeout: float | None = DEFAULT_TIMEOUT,
    where: str | None = None,
    failed: str = "SQL error",
    trusted: bool = False,
) -> Result:
    """Check ``text`` (:func:`check_query`) and run it on the sandboxed ``con`` in a
    transaction that is rolled back; stop it after ``timeout`` seconds. ``trusted``: the
    caller's own connection, not locked down (``Store.sql`` on a writable store).

    Raises:
        InvalidInput: refused, failed (``failed``: the first line of DuckDB's message), or
            stopped; one line, prefixed by ``where``, naming a file it may not read.
    """
    import polars as pl
    import pyarrow as pa

    if not trusted and not is_locked(con):
        raise RuntimeError("run_query needs a sandboxed connection (lock_down)")
    check_query(con, text, where)
    timer = threading.Timer(timeout, con.interrupt) if timeout else None
    con.execute("begin transaction")
    reader = None
    try:
        if timer is not None:
            timer.start()
        relation = con.sql(text, params=dict(params) if params else None)
        batches: list[pa.RecordBatch] = []
        count = 0
        if relation is None:  # a statement without a result
            table = pa.table({})
        else:
            reader = relation.to_arrow_reader(min(max_rows + 1, 100_000))
            for batch in reader:
                batches.append(batch)
                count += batch.num_rows
                if count > max_rows:
                    break
            table = pa.Table.from_batches(batches, reader.schema).slice(0, max_rows)
    except duckdb.InterruptException:
        at = f"{where}: " if where else ""
        raise InvalidInput(
            f"{at}stopped after {timeout:g} s (--timeout SECONDS to allow longer)"
        ) from None
    except duckdb.Error as exc:
        raise InvalidInput(_message(exc, where, failed)) from None
    finally:
        if timer is not None:
            timer.cancel()
        if reader is not None:
            reader.close()  # a result left open would refuse the rollback
        con.execute("rollback")
    frame = pl.DataFrame(table)  # a Table's columns, not a Series
    return Result(frame, count > max_rows)


def _message(exc: duckdb.Error, where: str | None, failed: str) -> str:
    at = f"{where}: " if where else ""
    first = _first_line(exc)
    blocked = _FILE.search(first)
    if blocked and "disabled by configuration" in first:
        return (
            f"{at}may not read {blocked.group(1)!r}: queries read the store only "
            "(--allow-read PATH lets one read a file or folder)"
        )
    if "disabled through configuration" in first or "has been locked" in first:
        return f"{at}not allowed here: {first}"
    if "read-only" in first or "read only" in first:
        return f"{at}the database is opened read-only here: {first}"
    return f"{at}{failed}: {first}"


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
