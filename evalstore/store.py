"""The DuckDB store: opening the file, the lock, schema migrations and transactions."""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import polars as pl

from evalstore import queries
from evalstore.errors import EvalstoreError, SchemaError, StoreLocked

if TYPE_CHECKING:
    from evalstore.ingest import IngestResult, Source
    from evalstore.runs import RunRef

__all__ = ["DEFAULT_DB", "Progress", "Store", "default_path", "refresh_views"]

DEFAULT_DB = "evalstore.duckdb"
Progress = Callable[[str, int, "int | None"], None]
"""Progress callback: (stage, done, total or None)."""

_SCHEMA_FILE = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")
_FRESH_VERSION = re.compile(r"^-- version: (\d+)$", re.MULTILINE)
FRESH_SCHEMA = "fresh.sql"
"""sql/schema/fresh.sql: the latest schema in one file, which a new store applies instead of
replaying every migration (written by evalstore/schema.py; tests/test_store.py checks that both
give the same catalogue)."""


def default_path() -> Path:
    """``$EVALSTORE_DB`` when set, else ``./evalstore.duckdb``."""
    return Path(os.environ.get("EVALSTORE_DB") or DEFAULT_DB)


def _schema_files() -> list[tuple[int, str, Path]]:
    found = []
    for path in sorted((queries.sql_dir() / "schema").glob("*.sql")):
        m = _SCHEMA_FILE.match(path.name)
        if m:
            found.append((int(m.group(1)), m.group(2), path))
    return found


def latest_schema_version() -> int:
    """The schema version this evalstore writes."""
    return max(v for v, _, _ in _schema_files())


def fresh_schema() -> tuple[int, str]:
    """The version and text of sql/schema/fresh.sql."""
    text = (queries.sql_dir() / "schema" / FRESH_SCHEMA).read_text()
    found = _FRESH_VERSION.search(text)
    if found is None:
        raise SchemaError(f"sql/schema/{FRESH_SCHEMA} has no '-- version: N' line")
    return int(found.group(1)), text


def _apply(
    con: duckdb.DuckDBPyConnection, migrations: Sequence[tuple[int, str, Path]], where: str
) -> None:
    """Run migration files in order, recording each in schema_version."""
    for version, name, path in migrations:
        try:
            con.execute(path.read_text())
        except duckdb.Error as exc:
            first = str(exc).strip().splitlines()[0]
            raise SchemaError(
                f"{where}: cannot upgrade to schema {version} ({name}): {first}"
            ) from None
        queries.run(con, "store/record_version", {"version": version, "name": name})


def replayed_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Apply every migration in order to an empty database (what fresh.sql stands for)."""
    queries.run(con, "store/create_schema_version")
    _apply(con, _schema_files(), "a new database")


def _connect(path: Path, read_only: bool, lock_timeout: float) -> duckdb.DuckDBPyConnection:
    deadline = time.monotonic() + lock_timeout
    delay = 0.05
    while True:
        try:
            con = duckdb.connect(str(path), read_only=read_only)
            con.execute("set enable_progress_bar = false")  # the library never prints
            return con
        except duckdb.IOException as exc:
            message = str(exc)
            if "lock" not in message.lower():
                raise SchemaError(f"{path}: cannot open as a DuckDB database: {message}") from None
            if time.monotonic() >= deadline:
                holder = re.search(r"\(PID (\d+)\)", message)
                who = f" by process {holder.group(1)}" if holder else ""
                raise StoreLocked(
                    f"{path} is locked{who}; gave up after {lock_timeout:g} s "
                    "(raise --lock-timeout to wait longer)"
                ) from None
            time.sleep(delay)
            delay = min(delay * 2, 0.5)
        except duckdb.Error as exc:
            raise SchemaError(f"{path}: cannot open as a DuckDB database: {exc}") from None


def refresh_views(con: duckdb.DuckDBPyConnection) -> None:
    """Rebuild ``v_runs``: the runs with one column ``param_<name>`` per parameter name in use,
    typed DOUBLE, BOOLEAN or VARCHAR from the values it takes. Called in every transaction
    that adds or removes runs."""
    columns = []
    for key, types in queries.fetch_rows(con, "store/param_types"):
        kinds = set(types) - {"NULL"}
        if kinds and kinds <= {"BIGINT", "UBIGINT", "DOUBLE"}:
            cast = "double"
        elif kinds == {"BOOLEAN"}:
            cast = "boolean"
        else:
            cast = "varchar"
        path = "'$.\"" + key.replace("'", "''").replace('"', '\\"') + "\"'"
        columns.append(f"cast(params ->> {path} as {cast}) as {queries.quote_name('param_' + key)}")
    extra = "".join(f",\n       {c}" for c in columns)
    # Parameter names are data: quote_name() quotes them and the JSON path escapes them;
    # nothing from a command line is spliced in.
    con.execute(
        "create or replace view v_runs as\n"
        "select run_id, experiment, name, experiment || '/' || name as run, created_at,\n"
        "       git_commit, tags, notes, params" + extra + "\nfrom runs"
    )


class Store:
    """An evalstore database: one DuckDB file with runs, raw outputs and metric values.

    Args:
        path: the database file; default ``$EVALSTORE_DB`` or ``./evalstore.duckdb``.
        read_only: open without write access (several readers may share the file).
        lock_timeout: seconds to wait for another process to release the file.
        memory_limit: DuckDB's memory limit (e.g. ``"8GB"``; default ``$EVALSTORE_MEMORY_LIMIT``
            or DuckDB's 80% of RAM); larger work spills to ``<db>.tmp/``.

    Raises:
        StoreLocked: another process kept the file locked for ``lock_timeout`` seconds.
        SchemaError: the file is not an evalstore database, or of a newer schema.
        EvalstoreError: ``read_only`` and the file does not exist.

    The store is a context manager; DuckDB lets one process write a file at a time, so close
    the store (or leave the ``with`` block) to let other processes in.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        read_only: bool = False,
        lock_timeout: float = 10.0,
        memory_limit: str | None = None,
    ) -> None:
        self.path = Path(path) if path is not None else default_path()
        self.read_only = read_only
        self.lock_timeout = lock_timeout
        if read_only and not self.path.exists():
            raise EvalstoreError(
                f"no evalstore database at {self.path} (ingest a run first, or pass --db)"
            )
        self.con = _connect(self.path, read_only, lock_timeout)
        limit = memory_limit or os.environ.get("EVALSTORE_MEMORY_LIMIT")
        if limit:
            try:
                self.con.execute("set memory_limit = $limit", {"limit": limit})
            except duckdb.Error as exc:
                self.con.close()
                raise EvalstoreError(f"bad memory limit {limit!r}: {exc}") from None
        try:
            pending = self._pending_migrations()
            if pending and read_only:
                self.con.close()
                self.con = _connect(self.path, False, lock_timeout)
                self._migrate(pending)
                self.con.close()
                self.con = _connect(self.path, True, lock_timeout)
            elif pending:
                self._migrate(pending)
        except BaseException:
            self.con.close()
            raise

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection and release the file lock."""
        self.con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = "read-only" if self.read_only else "read-write"
        return f"Store({str(self.path)!r}, {mode})"

    # -- schema ----------------------------------------------------------------------------

    def schema_version(self) -> int:
        """The schema version recorded in the file."""
        return int(queries.fetch_rows(self.con, "store/current_version")[0][0])

    def _pending_migrations(self) -> list[tuple[int, str, Path]]:
        known = _schema_files()
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

    def _migrate(self, pending: Sequence[tuple[int, str, Path]]) -> None:
        with self.transaction():
            queries.run(self.con, "store/create_schema_version")
            version, text = fresh_schema()
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
            _apply(self.con, pending, str(self.path))
            if self.schema_version() >= 4:
                refresh_views(self.con)

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
        """Rebuild ``v_runs`` (see :func:`refresh_views`)."""
        refresh_views(self.con)

    # -- runs ------------------------------------------------------------------------------

    def runs(
        self,
        *,
        experiment: str | None = None,
        tag: str | None = None,
        sort: str = "created_at",
        limit: int | None = None,
    ) -> pl.DataFrame:
        """List runs, newest first by default; see :func:`evalstore.runs.list_runs`."""
        from evalstore import runs

        return runs.list_runs(self, experiment=experiment, tag=tag, sort=sort, limit=limit)

    def run(self, ref: RunRef) -> dict[str, Any]:
        """One run with its metadata and per-task counts."""
        from evalstore import runs

        return runs.get_run(self, ref)

    def resolve(self, ref: RunRef) -> int:
        """The run id of a reference: ``NAME``, ``EXPERIMENT/NAME`` or an id."""
        from evalstore import runs

        return runs.resolve(self, ref)

    def remove(self, ref: RunRef) -> dict[str, Any]:
        """Delete a run and everything recorded for it; returns what was deleted."""
        from evalstore import runs

        return runs.remove_run(self, ref)

    def tag(self, ref: RunRef, tags: Sequence[str], *, remove: bool = False) -> list[str]:
        """Add (or remove) tags of a run; returns the run's tags afterwards."""
        from evalstore import runs

        return runs.tag_run(self, ref, tags, remove=remove)

    # -- ingest ----------------------------------------------------------------------------

    def ingest(
        self, data: Source | Sequence[Source], *, task: str, run: str, **options: Any
    ) -> IngestResult:
        """Ingest ranked lists into a new run; see :func:`evalstore.ingest.ingest` for options."""
        from evalstore.ingest import ingest

        return ingest(self, data, task=task, run=run, **options)
