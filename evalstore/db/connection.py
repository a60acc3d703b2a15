"""The database file: opening it, the lock, schema migrations and transactions."""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from evalstore.db import queries, schema
from evalstore.errors import EvalstoreError, SchemaError, StoreLocked

if TYPE_CHECKING:
    import polars as pl
    from typing_extensions import Self

__all__ = ["DEFAULT_DB", "Database", "Progress", "default_path", "notify_upgrades", "notify_waits"]

DEFAULT_DB = "evalstore.duckdb"
Progress = Callable[[str, int, "int | None"], None]
"""Progress callback: (stage, done, total or None)."""
WaitNotice = Callable[[str], None]
"""Told once, with a one-line message, when opening a store must wait for another process."""


def default_path() -> Path:
    """``$EVALSTORE_DB`` when set, else ``./evalstore.duckdb``."""
    return Path(os.environ.get("EVALSTORE_DB") or DEFAULT_DB)


#: the notice of stores opened without an ``on_wait`` of their own (:func:`notify_waits`)
_default_notice: list[WaitNotice] = []
#: told when a writer upgrades a store's schema (:func:`notify_upgrades`)
_upgrade_notice: list[WaitNotice] = []


def notify_waits(notice: WaitNotice | None) -> None:
    """Tell ``notice`` (None: nobody) whenever a store opened without an ``on_wait`` of its
    own must wait for another process's lock: the command line prints it."""
    _default_notice[:] = [notice] if notice is not None else []


def notify_upgrades(notice: WaitNotice | None) -> None:
    """Tell ``notice`` (None: nobody), with a one-line message, whenever a store opened for
    writing is upgraded to this evalstore's schema: the command line prints it."""
    _upgrade_notice[:] = [notice] if notice is not None else []


def _connect(
    path: Path, read_only: bool, lock_timeout: float, on_wait: WaitNotice | None = None
) -> duckdb.DuckDBPyConnection:
    deadline = time.monotonic() + lock_timeout
    delay = 0.05
    told = False
    if on_wait is None and _default_notice:
        on_wait = _default_notice[0]
    while True:
        try:
            con = duckdb.connect(str(path), read_only=read_only)
            con.execute("set enable_progress_bar = false")  # the library never prints
            return con
        except duckdb.IOException as exc:
            message = str(exc)
            if "lock" not in message.lower():
                raise SchemaError(f"{path}: cannot open as a DuckDB database: {message}") from None
            holder = re.search(r"\(PID (\d+)\)", message)
            who = f" by process {holder.group(1)}" if holder else ""
            if time.monotonic() >= deadline:
                raise StoreLocked(
                    f"{path} is locked{who}; gave up after {lock_timeout:g} s "
                    "(raise --lock-timeout to wait longer)"
                ) from None
            if on_wait is not None and not told:
                on_wait(f"{path} is locked{who}; waiting up to {lock_timeout:g} s for it")
                told = True
            # short steps: a waiting process is in within 0.25 s of the lock's release
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 0.25)
        except duckdb.Error as exc:
            raise SchemaError(f"{path}: cannot open as a DuckDB database: {exc}") from None


class Database:
    """An evalstore database file: the DuckDB connection, its lock, its schema and transactions.

    :class:`evalstore.Store` adds the runs and ingest methods on top and documents the
    arguments; the layers below it (runs, ingest) take a ``Database``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        read_only: bool = False,
        lock_timeout: float = 10.0,
        memory_limit: str | None = None,
        on_wait: WaitNotice | None = None,
        create: bool = True,
        migrate: bool = True,
    ) -> None:
        self.path = Path(path) if path is not None else default_path()
        self.read_only = read_only
        self.lock_timeout = lock_timeout
        #: the schema version the store had before this open upgraded it (None: not upgraded)
        self.upgraded_from: int | None = None
        # a read-only store changes nothing: it is neither created nor upgraded
        create, migrate = create and not read_only, migrate and not read_only
        if not create and not self.path.exists():
            raise EvalstoreError(
                f"no evalstore database at {self.path} (ingest a run first, or pass --db)"
            )
        self.con = _connect(self.path, read_only, lock_timeout, on_wait)
        limit = memory_limit or os.environ.get("EVALSTORE_MEMORY_LIMIT")
        if limit:
            try:
                self.con.execute("set memory_limit = $limit", {"limit": limit})
            except duckdb.Error as exc:
                self.con.close()
                raise EvalstoreError(f"bad memory limit {limit!r}: {exc}") from None
        try:
            pending = self._pending_migrations()
            if pending:
                self._check_may_change(pending, create=create, migrate=migrate)
                self._migrate(pending)
        except BaseException:
            self.con.close()
            raise

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection and release the file lock."""
        self.con.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = "read-only" if self.read_only else "read-write"
        return f"{type(self).__name__}({str(self.path)!r}, {mode})"

    # -- schema ----------------------------------------------------------------------------

    def schema_version(self) -> int:
        """The schema version recorded in the file."""
        return int(queries.fetch_rows(self.con, "store/current_version")[0][0])

    def store_id(self) -> str:
        """The store's identity: a random UUID drawn when the store was created. Exports
        record it, so that runs of two stores never replace each other in one folder."""
        return str(queries.fetch_rows(self.con, "store/store_id")[0][0])

    def _pending_migrations(self) -> list[schema.Migration]:
        known = schema.migrations()
        latest = max(v for v, _, _ in known)
        has_version, n_tables = queries.fetch_rows(self.con, "store/schema_state")[0]
        if not has_version:
            if n_tables > 0:
                raise SchemaError(
                    f"{self.path} is a DuckDB database but not an evalstore store "
                    "(it has no schema_version table)"
                )
            return known
        current = self.schema_version()
        if current > latest:
            raise SchemaError(
                f"{self.path} has schema version {current}, newer than this evalstore supports "
                f"({latest}); upgrade evalstore"
            )
        return [m for m in known if m[0] > current]

    def _check_may_change(
        self, pending: Sequence[schema.Migration], *, create: bool, migrate: bool
    ) -> None:
        """Refuse to build the schema of an empty file unless ``create``, or to upgrade an
        older store unless ``migrate``, saying which command does it."""
        new = len(pending) == len(schema.migrations())  # no schema_version table yet
        if new and not create:
            raise SchemaError(
                f"{self.path} is an empty DuckDB database, not an evalstore store "
                "(`evalstore ingest` or `evalstore import` makes it one)"
            )
        if not new and not migrate:
            current, latest = self.schema_version(), pending[-1][0]
            raise SchemaError(
                f"{self.path} has schema version {current}, older than this evalstore's "
                f"{latest}; this command changes nothing: `evalstore upgrade --db {self.path}` "
                "upgrades it (as does any command that writes runs)"
            )

    def _migrate(self, pending: Sequence[schema.Migration]) -> None:
        with self.transaction():
            queries.run(self.con, "store/create_schema_version")
            version, text = schema.fresh_schema()
            # every version from 1 on pending: a new store (migrations commit with their
            # schema_version rows, so nothing else is in it)
            if version == pending[-1][0] and len(pending) == version:
                # a new store: the latest schema at once (its v_runs has no runs' parameters)
                self.con.execute(text)
                queries.run(
                    self.con,
                    "store/record_versions",
                    {"versions": [v for v, _, _ in pending], "names": [n for _, n, _ in pending]},
                )
                return
            new = len(pending) == len(schema.migrations())  # replayed: no version yet
            before = None if new else self.schema_version()
            schema.apply_migrations(self.con, pending, str(self.path))
            if self.schema_version() >= 4:
                schema.refresh_views(self.con)
        self.upgraded_from = before
        if before is not None and _upgrade_notice:
            _upgrade_notice[0](
                f"{self.path}: upgraded from schema version {before} to {pending[-1][0]}"
            )

    # -- transactions and queries -----------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """All statements inside commit together or not at all."""
        self.con.execute("begin transaction")
        try:
            yield self.con
            self.con.execute("commit")
        except BaseException as exc:
            with contextlib.suppress(duckdb.Error):  # a failed commit has rolled back already
                self.con.execute("rollback")
            if isinstance(exc, duckdb.TransactionException) and "onflict" in str(exc):
                # another connection of this process wrote the same rows (e.g. the next list
                # id) at the same time: DuckDB let the first one win
                raise StoreLocked(
                    f"{self.path}: another connection wrote to this store at the same time; "
                    "nothing was written, run it again"
                ) from None
            raise

    def query(self, name: str, params: Mapping[str, Any] | None = None) -> pl.DataFrame:
        """Run a named query from ``sql/`` (e.g. ``"store/list_runs"``) and return a frame."""
        return queries.fetch(self.con, name, params)

    def refresh_views(self) -> None:
        """Rebuild ``v_runs`` (see :func:`evalstore.db.schema.refresh_views`)."""
        schema.refresh_views(self.con)
