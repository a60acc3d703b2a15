"""evalstore runs, show, rm, tag: the run registry."""

from __future__ import annotations

import json
from typing import Annotated

import polars as pl
import typer

from evalstore import render
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
)
from evalstore.store import Store


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
    lock_timeout: LockOpt = 10.0,
    fmt: FormatOpt = Fmt.table,
) -> None:
    """List runs."""
    with Store(db, read_only=True, lock_timeout=lock_timeout) as store:
        frame = store.runs(experiment=experiment, tag=tag, sort=sort, limit=limit)
    if fmt is Fmt.table:
        frame = frame.select(
            "run_id", "experiment", "name", "created_at", "tasks", "n_rows", "tags", "git_commit"
        )
        frame = frame.with_columns(pl.col("git_commit").str.slice(0, 10))
    if fmt is Fmt.json:
        rows = [{**r, "params": json.loads(r["params"] or "{}")} for r in frame.to_dicts()]
        typer.echo(json.dumps(render.jsonable(rows), indent=2))
        return
    emit(frame, fmt)


@command("show")
def show_cmd(
    run: RunArg, db: DbOpt = None, lock_timeout: LockOpt = 10.0, fmt: FormatOpt = Fmt.table
) -> None:
    """Show one run: metadata, params, tags and what it holds."""
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
    lock_timeout: LockOpt = 10.0,
) -> None:
    """Delete a run and everything recorded for it."""
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
    lock_timeout: LockOpt = 10.0,
) -> None:
    """Add tags to a run (or remove them with --remove)."""
    with Store(db, lock_timeout=lock_timeout) as store:
        now = store.tag(run, tags, remove=remove)
    out.print(f"tags: {', '.join(now) if now else '(none)'}", markup=False)
