"""evalstore export and import: Parquet exports of the raw tables, the way to Spark."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evalstore.cli.common import DbOpt, LockOpt, command, err, out, progress_bar

if TYPE_CHECKING:
    from evalstore.store.facade import Store


@command("export")
def export_cmd(
    to: Annotated[Path, typer.Option("--to", help="Export folder (hive-style run_id=... parts).")],
    runs: Annotated[
        list[str] | None,
        typer.Option("--runs", "-r", help="Only this run (repeatable) [default: every run]."),
    ] = None,
    db: DbOpt = None,
    lock_timeout: LockOpt = 60.0,
) -> None:
    """Write the raw tables as Parquet partitioned by run, with a manifest; a re-exported
    run replaces its partitions atomically, and a killed export is finished by the next."""
    from evalstore.scale.export import export_runs
    from evalstore.store.facade import Store

    with (
        Store(db, read_only=True, lock_timeout=lock_timeout) as store,
        progress_bar(True, "export") as cb,
    ):
        manifest = export_runs(store, to, runs=runs or None, progress=cb)
    out.print(f"exported {len(manifest.get('runs', []))} run(s) to {to}", markup=False)


@command("import")
def import_cmd(
    source: Annotated[Path, typer.Argument(help="A folder written by evalstore export.")],
    replace: Annotated[
        bool, typer.Option("--replace", help="Replace runs of the same EXPERIMENT/NAME.")
    ] = False,
    db: DbOpt = None,
    lock_timeout: LockOpt = 60.0,
) -> None:
    """Import an export into this database (new run ids, every run in one transaction);
    the whole folder is checked before anything is written: every file against its
    SHA-256, every row as ingest checks it (an export written before checksums is imported
    with a warning)."""
    from evalstore.db.connection import default_path
    from evalstore.scale.importer import import_runs
    from evalstore.store.facade import write_store

    def warn(message: str) -> None:
        err.print(f"Warning: {message}", markup=False)

    def run_import(store: Store) -> list[str]:
        with progress_bar(True, "import") as cb:
            return import_runs(store, source, replace=replace, progress=cb, warn=warn)

    names = write_store(db or default_path(), run_import, lock_timeout=lock_timeout)
    out.print(f"imported {len(names)} run(s): {', '.join(names)}", markup=False)
