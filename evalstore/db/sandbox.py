"""The sandbox of SQL that users supply (``evalstore sql``, dashboard specs' ``sql``).

:func:`lock_down` turns a DuckDB database instance into a sandbox, for good: external access
off (no file, folder, URL or other database but the store itself, no extension loaded or
installed) except the files and folders the user named with ``--allow-read``, and the
configuration locked, so that no statement can turn it back on. :func:`check_query` accepts
one read-only statement (a SELECT, in any of its forms: ``WITH``, ``FROM``, ``DESCRIBE``,
``SHOW``, ``SUMMARIZE``, ``VALUES``; ``EXPLAIN``; ``CALL`` of a table function) and refuses
anything else, before it runs. :func:`run_query` runs it inside a transaction that is rolled
back, stopped after ``timeout`` seconds, fetching at most ``max_rows`` rows.

Everything that writes (``ATTACH``, ``COPY``, ``EXPORT``, ``INSERT``, ``SET``..., also inside
an ``EXPLAIN ANALYZE``, which runs what it explains) is refused by the statement check, and
reads of anything but the store by DuckDB's own ``enable_external_access = false``: two
independent locks (``tests/test_sandbox.py`` tries each way out). One gap DuckDB leaves: the
files and folders of ``--allow-read`` (``allowed_paths``, ``allowed_directories``) are open to
writes as well as reads, and neither a read-only store nor another setting stops a ``COPY
TO`` there, so under ``--allow-read`` the statement check alone keeps them unwritten.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from evalstore.db import queries
from evalstore.errors import InvalidInput

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_ROWS",
    "DEFAULT_TIMEOUT",
    "PLAIN_TYPES",
    "READ_HINT",
    "ROWS_AT_MOST",
    "Result",
    "Rows",
    "check_query",
    "is_locked",
    "lock_down",
    "run_query",
    "run_rows",
]

#: rows fetched at most by default (``--max-rows``)
DEFAULT_MAX_ROWS = 1_000_000
#: seconds a query may run by default (``--timeout``)
DEFAULT_TIMEOUT = 300.0
#: bytes (Arrow's, in memory) fetched at most by default for a screen or a page (``--max-mb``)
DEFAULT_MAX_BYTES = 100_000_000
#: rows per batch fetched under a byte budget: few, so that one batch stays small
_BYTES_BATCH = 64
_READ_ONLY = frozenset(
    {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN, duckdb.StatementType.CALL}
)
#: the DuckDB types whose values Python's fetch gives as polars gives them from Arrow
PLAIN_TYPES = frozenset(
    {"boolean", "tinyint", "smallint", "integer", "bigint", "utinyint", "usmallint", "uinteger",
     "ubigint", "float", "double", "varchar", "date", "timestamp"}
)  # fmt: skip
#: the most bytes a value takes as Arrow (8 of data, its validity bit, a text's offset) but text
_ROW_BOUND = 24
#: the most rows :func:`run_rows` fetches (a larger result runs again, in run_query)
ROWS_AT_MOST = 20_000
#: what a refused read says by default (the command line's words; the UI says its own)
READ_HINT = "queries read the store only (--allow-read PATH lets one read a file or folder)"
_FILE = re.compile(r'Cannot access (?:file|directory) "([^"]*)"')


@dataclass(frozen=True)
class Result:
    """A query's rows (at most ``max_rows``, and about ``max_bytes``) and whether more were
    left out; ``bytes_cap``: the byte budget that cut them, if that is what did."""

    frame: pl.DataFrame
    truncated: bool
    bytes_cap: int | None = None

    def note(self, rows_hint: str, bytes_hint: str) -> str:
        """What was left out, in one line ("" when nothing was)."""
        if not self.truncated:
            return ""
        if self.bytes_cap is not None:
            return (
                f"truncated at {self.bytes_cap / 1e6:g} MB: the first {self.frame.height:,} "
                f"rows only ({bytes_hint})"
            )
        return f"the first {self.frame.height:,} rows only ({rows_hint})"


@dataclass(frozen=True)
class Rows:
    """A query's rows as Python tuples (at most ``max_rows``), its column names and DuckDB
    type ids (``bigint``, ``varchar``...), and whether more rows were left out."""

    columns: tuple[str, ...]
    types: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    truncated: bool


def is_locked(con: duckdb.DuckDBPyConnection) -> bool:
    rows = queries.fetch_rows(con, "store/config_locked")
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


def check_query(con: duckdb.DuckDBPyConnection | None, text: str, where: str | None = None) -> None:
    """Refuse, before it runs, anything but one read-only statement. An ``EXPLAIN`` (which,
    with ``ANALYZE``, runs what it explains) is judged by the statement it explains. ``con``:
    the connection whose parser reads it (None: DuckDB's default one).

    Raises:
        InvalidInput: it does not parse, holds no statement or several, or is not read-only.
    """
    at = f"{where}: " if where else ""
    try:
        statements = (con or duckdb).extract_statements(text)
    except duckdb.Error as exc:
        raise InvalidInput(f"{at}SQL error: {_first_line(exc)}") from None
    if not statements:
        raise InvalidInput(f"{at}no statement to run")
    if len(statements) > 1:
        raise InvalidInput(
            f"{at}one statement at a time, found {len(statements)} (separated by ';')"
        )
    kinds = _kinds(con, statements[0].query)
    refused = [k for k in kinds if k not in _READ_ONLY or k == duckdb.StatementType.EXPLAIN]
    if not kinds or refused:
        what = refused[0].name if refused else "a statement it cannot see"
        inside = " inside EXPLAIN" if statements[0].type == duckdb.StatementType.EXPLAIN else ""
        raise InvalidInput(
            f"{at}only a read-only query runs here (SELECT, WITH, FROM, DESCRIBE, SHOW, "
            f"SUMMARIZE, EXPLAIN of one of them, CALL), not {what}{inside}"
        )


def _kinds(con: duckdb.DuckDBPyConnection | None, query: str, depth: int = 0) -> list[Any]:
    """The kinds (DuckDB's own statement types) of what ``query`` runs: its own, or for an
    EXPLAIN those of every reading of the statement it explains (empty: none parses)."""
    kind = (con or duckdb).extract_statements(query)[0].type
    if kind != duckdb.StatementType.EXPLAIN:
        return [kind]
    if depth > 3:
        return []
    kinds = []
    for inner in _explained(query):
        try:
            statements = (con or duckdb).extract_statements(inner)
        except duckdb.Error:
            continue  # not a reading DuckDB takes
        if len(statements) == 1:
            kinds += _kinds(con, statements[0].query, depth + 1) or [kind]
        elif statements:
            kinds.append(kind)  # several statements: never read-only here
    return kinds


def _explained(query: str) -> list[str]:
    """The texts an ``EXPLAIN [ANALYZE] X`` or ``EXPLAIN (options) X`` may explain, read with
    DuckDB's tokenizer: after the keywords, and where a parenthesis follows ``EXPLAIN``
    (options, or a parenthesised query) also after its closing one."""
    tokens = duckdb.tokenize(query)
    starts = [start for start, _ in tokens] + [len(query)]
    words = [
        (query[a:b].strip().lower(), a)
        for (a, kind), b in zip(tokens, starts[1:], strict=True)
        if kind != duckdb.token_type.comment
    ]
    if not words or words[0][0] != "explain":
        return []
    i = 1
    while i < len(words) and words[i][0] in ("analyze", "analyse", "verbose"):
        i += 1
    if i >= len(words):
        return []
    found = [query[words[i][1] :]]
    if words[i][0] == "(":
        depth = 0
        for j in range(i, len(words)):
            depth += {"(": 1, ")": -1}.get(words[j][0], 0)
            if depth == 0:
                if j + 1 < len(words):
                    found.append(query[words[j + 1][1] :])
                break
    return found


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
    max_bytes: int | None = None,
    timeout_hint: str = "--timeout SECONDS to allow longer",
    read_hint: str = READ_HINT,
) -> Result:
    """Check ``text`` (:func:`check_query`) and run it on the sandboxed ``con`` in a
    transaction that is rolled back; stop it after ``timeout`` seconds (the message ends with
    ``timeout_hint``). ``trusted``: the caller's own connection, not locked down
    (``Store.sql`` on a writable store). ``max_bytes``: stop fetching once the rows hold
    about that many bytes (in memory, as Arrow), in small batches, so that a result of huge
    values is never fetched whole.

    Raises:
        InvalidInput: refused, failed (``failed``: the first line of DuckDB's message), or
            stopped; one line, prefixed by ``where``, naming a file it may not read.
    """
    import polars as pl
    import pyarrow as pa

    batches: list[pa.RecordBatch] = []
    count, size, cut = 0, 0, False
    with _guarded(con, text, params, timeout, where, failed, trusted, timeout_hint, read_hint) as (
        relation
    ):
        if relation is None:  # a statement without a result
            table = pa.table({})
        else:
            rows = min(max_rows + 1, 100_000 if max_bytes is None else _BYTES_BATCH)
            reader = relation.to_arrow_reader(rows)
            try:
                for batch in reader:
                    if max_bytes is not None and size + batch.nbytes > max_bytes:
                        batch = _within(batch, max_bytes - size)
                        cut = True
                    batches.append(batch)
                    count += batch.num_rows
                    size += batch.nbytes
                    if count > max_rows or cut:
                        break
                table = pa.Table.from_batches(batches, reader.schema).slice(0, max_rows)
            finally:
                reader.close()  # a result left open would refuse the rollback
    names = table.column_names
    twice = next((c for i, c in enumerate(names) if c in names[:i]), None)
    if twice is not None:  # a frame's columns need names of their own
        at = f"{where}: " if where else ""
        raise InvalidInput(
            f"{at}the result has more than one column named {twice!r}; name each (AS ...)"
        )
    frame = pl.DataFrame(table)  # a Table's columns, not a Series
    if cut and count <= max_rows:
        return Result(frame, True, max_bytes)
    return Result(frame, count > max_rows)


def run_rows(
    con: duckdb.DuckDBPyConnection,
    text: str,
    params: Mapping[str, Any] | None = None,
    *,
    max_rows: int = DEFAULT_MAX_ROWS,
    timeout: float | None = DEFAULT_TIMEOUT,
    max_bytes: int | None = None,
    timeout_hint: str = "--timeout SECONDS to allow longer",
    kinds: frozenset[str] = PLAIN_TYPES,
) -> Rows | None:
    """:func:`run_query`'s result as Python rows, fetched without Arrow or polars (whose
    imports cost a short query three times its own time): for a result of distinct column
    names, each of a type of ``kinds`` and :data:`PLAIN_TYPES`, whose rows would hold, as
    Arrow, surely less than ``max_bytes`` (so that run_query would not cut them), of at most
    :data:`ROWS_AT_MOST` rows fetched (``max_rows`` and the rest of run_query's last batch).
    None otherwise, after the query ran (for at most that many rows): run_query then runs it
    again and gives the result, cut where it cuts it. The same checks, errors and transaction
    as run_query.
    """
    with _guarded(con, text, params, timeout, None, "SQL error", False, timeout_hint,
                  READ_HINT) as relation:  # fmt: skip
        if relation is None:
            return None
        columns = tuple(relation.columns)
        types = tuple(str(t.id) for t in relation.types)
        if len(set(columns)) < len(columns) or not (kinds & PLAIN_TYPES).issuperset(types):
            return None
        # the rows past max_rows + 1 up to the end of run_query's batch count in its bytes
        want = max_rows + 1 + (_BYTES_BATCH if max_bytes is not None else 0)
        rows = relation.limit(min(want, ROWS_AT_MOST + 1)).fetchall()
    if len(rows) > ROWS_AT_MOST:
        return None
    if max_bytes is not None:
        strings = [i for i, t in enumerate(types) if t == "varchar"]
        size = _ROW_BOUND * len(columns) * len(rows)
        size += sum(len(r[i].encode()) for r in rows for i in strings if r[i] is not None)
        if size >= max_bytes:
            return None
    return Rows(columns, types, rows[:max_rows], len(rows) > max_rows)


@contextlib.contextmanager
def _guarded(
    con: duckdb.DuckDBPyConnection,
    text: str,
    params: Mapping[str, Any] | None,
    timeout: float | None,
    where: str | None,
    failed: str,
    trusted: bool,
    timeout_hint: str,
    read_hint: str,
) -> Iterator[duckdb.DuckDBPyRelation | None]:
    """``text`` checked and run in a transaction rolled back at the end of the block, stopped
    after ``timeout`` seconds; DuckDB's errors inside the block as :func:`run_query` says."""
    if not trusted and not is_locked(con):
        raise RuntimeError("run_query needs a sandboxed connection (lock_down)")
    check_query(con, text, where)
    timer = threading.Timer(timeout, con.interrupt) if timeout else None
    con.execute("begin transaction")
    try:
        if timer is not None:
            timer.start()
        yield con.sql(text, params=dict(params) if params else None)
    except duckdb.InterruptException:
        at = f"{where}: " if where else ""
        raise InvalidInput(f"{at}stopped after {timeout:g} s ({timeout_hint})") from None
    except duckdb.Error as exc:
        raise InvalidInput(_message(exc, where, failed, read_hint)) from None
    finally:
        if timer is not None:
            timer.cancel()
        con.execute("rollback")


def _within(batch: Any, budget: int) -> Any:
    """The longest head of ``batch`` that holds at most ``budget`` bytes."""
    low, high = 0, batch.num_rows  # the head of ``low`` rows fits; of ``high + 1`` does not
    while low < high:
        mid = (low + high + 1) // 2
        if batch.slice(0, mid).nbytes <= budget:
            low = mid
        else:
            high = mid - 1
    return batch.slice(0, low)


def _message(exc: duckdb.Error, where: str | None, failed: str, read_hint: str) -> str:
    at = f"{where}: " if where else ""
    first = _first_line(exc)
    blocked = _FILE.search(first)
    if blocked and "disabled by configuration" in first:
        return f"{at}may not read {blocked.group(1)!r}: {read_hint}"
    if "disabled through configuration" in first or "has been locked" in first:
        return f"{at}not allowed here: {first}"
    if "read-only" in first or "read only" in first:
        return f"{at}the database is opened read-only here: {first}"
    return f"{at}{failed}: {first}"


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
