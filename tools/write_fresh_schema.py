"""Writes sql/schema/fresh.sql, the latest schema in one file, from the migrations:

    python tools/write_fresh_schema.py

Run it after adding a migration (sql/schema/NNN_*.sql); tests/test_store.py fails until then.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import duckdb

from evalstore.db import queries
from evalstore.db.schema import FRESH_SCHEMA, latest_schema_version, refresh_views, replayed_schema

__all__ = ["DRAWN", "fresh_schema_text"]

#: Tables whose migration draws a value per store (its identity): fresh.sql draws it again
#: rather than copying the one drawn while this file was written.
DRAWN = {"store_info": "INSERT INTO store_info SELECT CAST(uuid() AS VARCHAR);"}


def fresh_schema_text() -> str:
    """sql/schema/fresh.sql as the migrations define it now: DuckDB's own export of the
    schema they build, with each column of a named ENUM type written by that name."""
    con = duckdb.connect()
    try:
        replayed_schema(con)
        refresh_views(con)  # v_runs of a store without runs
        enums = queries.fetch_rows(con, "store/user_enums")
        tables = {table for (table,) in queries.fetch_rows(con, "store/user_tables")}
        seeds = []  # rows a migration puts in a table (the next list id)
        for table in sorted(tables):
            if table in DRAWN:
                seeds.append(DRAWN[table])
                continue
            quoted = queries.quote_ident(table, tables)
            for row in con.execute(queries.template("store/table_rows", table=quoted)).fetchall():
                seeds.append(f"INSERT INTO {quoted} VALUES ({', '.join(map(_value, row))});")
        with tempfile.TemporaryDirectory() as tmp:  # a folder cannot be bound
            con.execute(queries.template("store/export_schema", folder=queries.literal(tmp)))
            lines = (Path(tmp) / "schema.sql").read_text().strip().splitlines()
    finally:
        con.close()
    kept = []
    for line in lines:
        if line.startswith("CREATE TABLE schema_version("):
            continue  # store/create_schema_version makes it
        if line.startswith("CREATE TABLE "):
            for name, labels in enums:
                inline = "ENUM(" + ", ".join(map(queries.literal, labels))
                line = line.replace(inline + ")", name)
        kept.append(line)
    version = latest_schema_version()
    header = (
        f"-- version: {version}\n"
        f"-- The schema of version {version} in one file: what a new store applies instead of\n"
        "-- replaying sql/schema/001_*.sql onwards (the same catalogue; tests/test_store.py\n"
        "-- checks). Written by `python tools/write_fresh_schema.py`: run it after adding a\n"
        "-- migration.\n"
    )
    return header + "\n".join(kept + seeds) + "\n"


def _value(value: object) -> str:
    """A seed value as SQL text."""
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return queries.literal(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"fresh.sql cannot hold a seed value of type {type(value).__name__}")
    return repr(value)


if __name__ == "__main__":
    target = queries.sql_dir() / "schema" / FRESH_SCHEMA
    target.write_text(fresh_schema_text())
    print(f"wrote {target}")
