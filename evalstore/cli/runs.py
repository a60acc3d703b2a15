"""evalstore runs, show, rm, tag: the run registry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from evalstore.cli.common import (
    DbOpt,
    Fmt,
    FormatOpt,
    LockOpt,
    RunArg,
    command,
    emit,
    err,
    out,
    print_rows,
)

#: the columns of the `runs` table
SHOWN = ("run_id", "experiment", "name", "created_at", "tasks", "n_rows", "tags", "git_commit")


def _run_rows(
    db: Path | None, lock_timeout: float, **filters: Any
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The rows of :meth:`Store.runs` as tuples, without polars and pyarrow (or the ingest
    modules Store brings), so `evalstore runs` starts fast."""
    from evalstore.database import Database
    from evalstore.runs import list_run_rows

    with Database(db, read_only=True, lock_timeout=lock_timeout) as store:
        return list_run_rows(store, **filters)


@command("runs")
def runs_cmd(
    experiment: Annotated[
        str | None, typer.Option("--experiment", "-e", help="Only this experiment.")
    ] = None,
    tag: Annotated[str | None, typer.Option("--tag", help="Only runs with this tag.")] = None,
    sort: Annotated[
        str, typer.Option("--sort", help="created_at (newest first) | name | id.")
    ] = "created_at",
    limit: Annotated[
        int | None, typer.Option("--limit", "-n", help="At most this many runs.")
    ] = None,
    db: DbOpt = None,
    lock_timeout: LockOpt = 60.0,
    fmt: FormatOpt = Fmt.table,
) -> None:
    """List runs."""
    from evalstore import render

    filters: dict[str, Any] = {"experiment": experiment, "tag": tag, "sort": sort, "limit": limit}
    if fmt not in (Fmt.table, Fmt.json):  # the frame writers
        from evalstore.store import Store

        with Store(db, read_only=True, lock_timeout=lock_timeout) as store:
            emit(store.runs(**filters), fmt)
        return
    columns, rows = _run_rows(db, lock_timeout, **filters)
    records = [dict(zip(columns, row, strict=True)) for row in rows]
    if fmt is Fmt.json:
        decoded = [{**r, "params": json.loads(r["params"] or "{}")} for r in records]
        typer.echo(json.dumps(render.jsonable(decoded), indent=2))
        return
    for r in records:
        r["git_commit"] = r["git_commit"] and r["git_commit"][:10]
    print_rows(SHOWN, [[r[c] for c in SHOWN] for r in records])


@command("show")
def show_cmd(
    run: RunArg, db: DbOpt = None, lock_timeout: LockOpt = 60.0, fmt: FormatOpt = Fmt.table
) -> None:
    """Show one run: metadata, params, tags and what it holds."""
    import polars as pl

    from evalstore import render
    from evalstore.store import Store

    with Store(db, read_only=True, lock_timeout=lock_timeout) as store:
        info = store.run(run)
    if fmt is Fmt.json:
        typer.echo(json.dumps(render.jsonable(info), indent=2, default=str))
        return
    rows = [
        ("run_id", info["run_id"]),
        ("experiment", info["experiment"]),
        ("name", info["name"]),
        ("created_at", info["created_at"]),
        ("git_commit", info["git_commit"]),
        ("tags", info["tags"]),
        ("notes", info["notes"]),
    ]
    rows += [(f"param {k}", json.dumps(v)) for k, v in info["params"].items()]
    rows += [
        (f"task {t['task']}", f"{t['rows']:,} rows, {t['lists']:,} lists") for t in info["tasks"]
    ]
    frame = pl.DataFrame(
        {"field": [r[0] for r in rows], "value": [render.cell(r[1]) for r in rows]}
    )
    emit(frame, fmt, title=f"{info['experiment']}/{info['name']}")


@command("rm")
def rm_cmd(
    run: RunArg,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
    db: DbOpt = None,
    lock_timeout: LockOpt = 60.0,
) -> None:
    """Delete a run and everything recorded for it."""
    from evalstore.store import Store

    with Store(db, lock_timeout=lock_timeout) as store:
        info = store.run(run)
        ref = f"{info['experiment']}/{info['name']}"
        if not yes and not typer.confirm(f"Delete run {ref} (id {info['run_id']})?", err=True):
            err.print("Nothing deleted.")
            raise typer.Exit(code=1)
        store.remove(info["run_id"])
    out.print(f"deleted run {ref} (id {info['run_id']})", markup=False)


@command("tag")
def tag_cmd(
    run: RunArg,
    tags: Annotated[list[str], typer.Argument(help="Tags to add.", show_default=False)],
    remove: Annotated[bool, typer.Option("--remove", help="Remove these tags instead.")] = False,
    db: DbOpt = None,
    lock_timeout: LockOpt = 60.0,
) -> None:
    """Add tags to a run (or remove them with --remove)."""
    from evalstore.store import Store

    with Store(db, lock_timeout=lock_timeout) as store:
        now = store.tag(run, tags, remove=remove)
    out.print(f"tags: {', '.join(now) if now else '(none)'}", markup=False)
