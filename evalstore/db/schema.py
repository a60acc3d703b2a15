"""The schema of a store: its migrations (``sql/schema/NNN_*.sql``), the latest schema in one
file (``sql/schema/fresh.sql``), the views rebuilt from the data (``v_runs``) and the names of
the row tables. Pure functions over a DuckDB connection; :mod:`evalstore.db.connection` calls them
when it opens a file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import duckdb

from evalstore.db import queries
from evalstore.errors import SchemaError

__all__ = [
    "FRESH_SCHEMA",
    "ROW_TABLES",
    "Migration",
    "apply_migrations",
    "fresh_schema",
    "latest_schema_version",
    "migrations",
    "refresh_views",
    "refresh_views_for_run",
    "replayed_schema",
    "row_table",
    "rows_sql",
]

_SCHEMA_FILE = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")
_FRESH_VERSION = re.compile(r"^-- version: (\d+)$", re.MULTILINE)
FRESH_SCHEMA = "fresh.sql"
"""sql/schema/fresh.sql: the latest schema in one file, which a new store applies instead of
replaying every migration (written by tools/write_fresh_schema.py; tests/test_store.py checks
that both give the same catalogue)."""

Migration = tuple[int, str, Path]
"""(version, name, file) of one ``sql/schema/NNN_name.sql``."""


def migrations() -> list[Migration]:
    """Every migration file, in version order."""
    found = []
    for path in sorted((queries.sql_dir() / "schema").glob("*.sql")):
        m = _SCHEMA_FILE.match(path.name)
        if m:
            found.append((int(m.group(1)), m.group(2), path))
    return found


def latest_schema_version() -> int:
    """The schema version this evalstore writes."""
    return max(v for v, _, _ in migrations())


def fresh_schema() -> tuple[int, str]:
    """The version and text of sql/schema/fresh.sql."""
    text = (queries.sql_dir() / "schema" / FRESH_SCHEMA).read_text()
    found = _FRESH_VERSION.search(text)
    if found is None:
        raise SchemaError(f"sql/schema/{FRESH_SCHEMA} has no '-- version: N' line")
    return int(found.group(1)), text


def apply_migrations(
    con: duckdb.DuckDBPyConnection, pending: Sequence[Migration], where: str
) -> None:
    """Run migration files in order, recording each in schema_version."""
    for version, name, path in pending:
        try:
            con.execute(queries.load(f"schema/{path.stem}").text)  # includes expanded
        except duckdb.Error as exc:
            first = str(exc).strip().splitlines()[0]
            raise SchemaError(
                f"{where}: cannot upgrade to schema {version} ({name}): {first}"
            ) from None
        queries.run(con, "store/record_version", {"version": version, "name": name})


def replayed_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Apply every migration in order to an empty database (what fresh.sql stands for)."""
    queries.run(con, "store/create_schema_version")
    apply_migrations(con, migrations(), "a new database")


_PARAM_TYPES = frozenset({"double", "boolean", "varchar"})  # what store/param_types gives


def refresh_views(con: duckdb.DuckDBPyConnection) -> None:
    """Rebuild ``v_runs``: the runs with one column ``param_<name>`` per parameter name in use,
    typed DOUBLE, BOOLEAN or VARCHAR from the values it takes (``store/param_types``), and
    ``v_groups``. Called in every transaction that adds or removes runs."""
    # A view cannot take its columns from the data, so v_runs' two lists of parameter columns
    # are the one SQL built here: each item is a fragment of sql/store/views.sql, joined. The
    # parameter names are data: quote_name() quotes them as column names and literal() as the
    # string each key is compared with; the type comes from an allow-list; nothing from a
    # command line is spliced in, and no JSON path is built from a name.
    columns, values = [], []
    for key, kind in queries.fetch_rows(con, "store/param_types"):
        column = queries.quote_name("param_" + key)
        columns.append(queries.template("store/v_runs_column", column=column))
        values.append(
            queries.template(
                "store/v_runs_param",
                key=queries.literal(key),
                type=queries.quote_ident(kind, _PARAM_TYPES),
                column=column,
            )
        )
    con.execute(queries.template("store/v_runs", columns="".join(columns), values="".join(values)))
    tables = {table for (table,) in queries.fetch_rows(con, "store/user_tables")}
    if "student_t" in tables:  # schema 11 on: the configurations
        queries.run(con, "store/v_groups")


def refresh_views_for_run(con: duckdb.DuckDBPyConnection, run_id: int, has_params: bool) -> None:
    """After the run ``run_id`` was inserted (no run deleted) in the caller's transaction:
    :func:`refresh_views`, unless the run cannot have changed them. ``v_groups`` holds no
    data-dependent text, and ``v_runs`` depends on the data only through ``param_types``,
    a function of the distinct (name, JSON type) pairs of the runs' parameters: a run whose
    pairs other runs have already (``store/params_add_kinds``; ``has_params`` false: it has
    none) leaves both as they are (a step run has its parent's parameters). The views were
    current before: every transaction that adds or removes runs refreshes them."""
    if has_params and queries.fetch_rows(con, "store/params_add_kinds", {"run_id": run_id})[0][0]:
        refresh_views(con)


#: The tables of ranked items (sql/schema/007_lean_rows.sql): item ids as int32 integers or
#: as text, scores as float32 or float64. An ingest writes all its rows to one of them.
def row_table(int_items: bool, float32: bool) -> str:
    """The row table of int32 item ids or text ones, float32 scores or float64 ones."""
    return f"list_rows_{'int' if int_items else 'text'}_{'f32' if float32 else 'f64'}"


ROW_TABLES = frozenset(row_table(i, f) for i in (True, False) for f in (True, False))


def rows_sql(name: str, table: str, **parts: str) -> str:
    """A query written for any row table (``{rows}``), for ``table`` (queries.template)."""
    return queries.template(name, rows=queries.quote_ident(table, ROW_TABLES), **parts)
