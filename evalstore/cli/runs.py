"""evalstore runs, show, rm, mv, set, tag, upgrade: the run registry and its store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, NamedTuple

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

#: the columns of the `runs` table (and `steps` when a run has step evaluations)
SHOWN = ("run_id", "experiment", "name", "status", "created_at", "tasks", "n_rows", "tags",
         "git_commit")  # fmt: skip


def _run_rows(
    db: Path | None, lock_timeout: float, filters: RunFilters
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The rows of :meth:`Store.runs` as tuples, without polars and pyarrow (or the ingest
    modules Store brings), so `evalstore runs` starts fast."""
    from evalstore.db.connection import Database
    from evalstore.runs.selection import list_run_rows

    with Database(db, read_only=True, lock_timeout=lock_timeout) as store:
        return list_run_rows(store, experiment=filters.experiment, tag=filters.tag,
                             commit=filters.commit, where=filters.where, sort=filters.sort,
                             limit=filters.limit, step_runs=False)  # fmt: skip


class RunFilters(NamedTuple):
    """The filters of `evalstore runs`, as :meth:`Store.runs` takes them."""

    experiment: str | None
    tag: str | None
    commit: str | None
    where: str | None
    sort: str
    limit: int | None


@command("runs")
def runs_cmd(
    experiment: Annotated[
        str | None, typer.Option("--experiment", "-e", help="Only this experiment.")
    ] = None,
    tag: Annotated[str | None, typer.Option("--tag", help="Only runs with this tag.")] = None,
    commit: Annotated[
        str | None,
        typer.Option("--commit", help="Only runs of this git commit (or a prefix of it)."),
    ] = None,
    where: Annotated[
        str | None,
        typer.Option(
            "--where",
            help="Only runs where this SQL predicate over v_runs holds, e.g. "
            '"param_lr > 0.01" (run in the sandbox of `evalstore sql`).',
        ),
    ] = None,
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

    if fmt not in (Fmt.table, Fmt.json, Fmt.nl):  # the frame writers
        from evalstore.store.facade import Store

        with Store(db, read_only=True, lock_timeout=lock_timeout) as store:
            frame = store.runs(experiment=experiment, tag=tag, commit=commit, where=where,
                               sort=sort, limit=limit)  # fmt: skip
        emit(frame, fmt)
        return
    filters = RunFilters(experiment, tag, commit, where, sort, limit)
    columns, rows = _run_rows(db, lock_timeout, filters)
    records = [dict(zip(columns, row, strict=True)) for row in rows]
    if fmt in (Fmt.json, Fmt.nl):
        decoded = render.jsonable(
            [{**r, "params": json.loads(r["params"] or "{}")} for r in records]
        )
        if fmt is Fmt.json:
            typer.echo(json.dumps(decoded, indent=2))
        else:
            typer.echo("\n".join(json.dumps(r) for r in decoded))
        return
    for r in records:
        r["git_commit"] = r["git_commit"] and r["git_commit"][:10]
    shown = (*SHOWN, "steps") if any(r["steps"] for r in records) else SHOWN
    print_rows(shown, [[r[c] for c in shown] for r in records])


@command("show")
def show_cmd(
    run: RunArg, db: DbOpt = None, lock_timeout: LockOpt = 60.0, fmt: FormatOpt = Fmt.table
) -> None:
    """Show one run: metadata, params, tags and what it holds."""
    import polars as pl

    from evalstore import render
    from evalstore.store.facade import Store

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
        ("status", info["status"]),
    ]
    if info["started_at"] is not None:  # opened from a training loop (or `run new`)
        rows += [(k, info[k]) for k in ("pid", "host", "started_at", "heartbeat_at",
                                        "finished_at")]  # fmt: skip
    if info["steps"]:
        rows.append(("steps", info["steps"]))
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
    runs: Annotated[
        list[str] | None,
        typer.Argument(help="Runs: NAME, EXPERIMENT/NAME or id:N.", show_default=False),
    ] = None,
    experiment: Annotated[
        str | None, typer.Option("--experiment", "-e", help="Every run of this experiment.")
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
    db: DbOpt = None,
    lock_timeout: LockOpt = 60.0,
) -> None:
    """Delete runs (several at once, or every run of an --experiment) and everything
    recorded for them, in one transaction."""
    from evalstore.errors import InvalidInput
    from evalstore.store.facade import Store

    if not runs and experiment is None:
        raise InvalidInput("name the runs to delete, or an --experiment")
    with Store(db, lock_timeout=lock_timeout, create=False) as store:
        ids = [store.run(r)["run_id"] for r in runs or ()]
        if experiment is not None:
            ids += store.runs(experiment=experiment, sort="id")["run_id"].to_list()
            if not ids:
                raise InvalidInput(f"no runs in experiment {experiment!r}")
        infos = [store.run(i) for i in dict.fromkeys(ids)]
        refs = [f"{i['experiment']}/{i['name']} (id {i['run_id']})" for i in infos]
        what = refs[0] if len(refs) == 1 else f"{len(refs)} runs: {', '.join(refs)}"
        if not yes and not typer.confirm(f"Delete run {what}?", err=True):
            err.print("Nothing deleted.")
            raise typer.Exit(code=1)
        store.remove_many([i["run_id"] for i in infos])
    for ref in refs:
        out.print(f"deleted run {ref}", markup=False)


@command("mv")
def mv_cmd(
    run: RunArg,
    new: Annotated[
        str,
        typer.Argument(
            help="The new name: NAME, or EXPERIMENT/NAME to move it.", show_default=False
        ),
    ],
    db: DbOpt = None,
    lock_timeout: LockOpt = 60.0,
) -> None:
    """Rename a run, or move it to another experiment; its id, rows and metrics stay."""
    from evalstore.store.facade import Store

    with Store(db, lock_timeout=lock_timeout, create=False) as store:
        before = store.run(run)
        after = store.rename(before["run_id"], new)
    out.print(
        f"renamed run {before['experiment']}/{before['name']} to "
        f"{after['experiment']}/{after['name']} (id {after['run_id']})",
        markup=False,
    )


@command("set")
def set_cmd(
    run: RunArg,
    notes: Annotated[
        str | None, typer.Option("--notes", help='New notes ("" clears them).')
    ] = None,
    param: Annotated[
        list[str] | None,
        typer.Option("--param", "-p", help="Set a parameter key=value (JSON values stay typed)."),
    ] = None,
    unset: Annotated[
        list[str] | None, typer.Option("--unset", help="Remove this parameter (repeatable).")
    ] = None,
    db: DbOpt = None,
    lock_timeout: LockOpt = 60.0,
) -> None:
    """Edit a run's notes and parameters after ingest."""
    from evalstore.store.facade import Store

    with Store(db, lock_timeout=lock_timeout, create=False) as store:
        info = store.set(run, notes=notes, params=param, unset=unset or ())
    shown = ", ".join(f"{k}={json.dumps(v)}" for k, v in info["params"].items()) or "(none)"
    out.print(
        f"run {info['experiment']}/{info['name']} (id {info['run_id']}): params {shown}; "
        f"notes {info['notes']!r}",
        markup=False,
    )


@command("tag")
def tag_cmd(
    run: RunArg,
    tags: Annotated[list[str], typer.Argument(help="Tags to add.", show_default=False)],
    remove: Annotated[bool, typer.Option("--remove", help="Remove these tags instead.")] = False,
    db: DbOpt = None,
    lock_timeout: LockOpt = 60.0,
) -> None:
    """Add tags to a run (or remove them with --remove)."""
    from evalstore.store.facade import Store

    with Store(db, lock_timeout=lock_timeout, create=False) as store:
        now = store.tag(run, tags, remove=remove)
    out.print(f"tags: {', '.join(now) if now else '(none)'}", markup=False)


@command("upgrade")
def upgrade_cmd(db: DbOpt = None, lock_timeout: LockOpt = 60.0) -> None:
    """Upgrade a store written by an older evalstore to this version's schema, in place (in
    one transaction). Commands that only read never upgrade a store; commands that write runs
    (ingest, import, log, rm, mv, set, tag) upgrade it first and say so."""
    from evalstore.db.connection import Database, notify_upgrades

    notify_upgrades(None)  # said once, below
    with Database(db, lock_timeout=lock_timeout, create=False) as store:
        before, now = store.upgraded_from, store.schema_version()
    if before is None:
        out.print(f"{store.path}: schema version {now}, this evalstore's: nothing to do",
                  markup=False)  # fmt: skip
    else:
        out.print(f"{store.path}: upgraded from schema version {before} to {now}", markup=False)
