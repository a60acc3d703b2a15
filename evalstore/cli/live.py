"""evalstore run new, finish, flush: runs opened before their rows (a training loop, a shell
script), to log values to with `evalstore log`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from evalstore.cli.common import DbOpt, LockOpt, RunArg, app, command, err, out

if TYPE_CHECKING:
    from pathlib import Path

run_app = typer.Typer(
    help="Runs opened before their rows: from a training loop or a shell script.",
    no_args_is_help=True,
)
app.add_typer(run_app, name="run")


def _said(loaded: list[dict[str, Any]]) -> None:
    """One line on stderr for each batch of values kept beside the store, now written in."""
    for done in loaded:
        what = (
            f"dropped {done['values']:,} value(s) of run {done['run']}, deleted since"
            if done["dropped"]
            else f"wrote {done['values']:,} waiting value(s) of run {done['run']}"
            + (f" and its finish ({done['finish']})" if done["finish"] else "")
        )
        err.print(f"{what} (from {done['file']})", markup=False)


@command("new", group=run_app)
def new_cmd(
    run: Annotated[
        str, typer.Argument(help="The new run: EXPERIMENT/NAME (or NAME).", show_default=False)
    ],
    param: Annotated[
        list[str] | None,
        typer.Option("--param", "-p", help="Run parameter key=value (JSON values stay typed)."),
    ] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", "-t", help="Tag (repeatable).")] = None,
    notes: Annotated[str | None, typer.Option("--notes", help="Free text notes.")] = None,
    pid: Annotated[
        int | None,
        typer.Option(
            "--pid",
            help="The process the run lives with ($$ in a shell script): "
            "the run shows as crashed once it is gone [default: none, running until "
            "`evalstore run finish`].",
        ),
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Reopen the run of that name (running again).")
    ] = False,
    git_commit: Annotated[
        str | None,
        typer.Option("--git-commit", help="Commit to record [default: the current directory's]."),
    ] = None,
    db: DbOpt = None,
    lock_timeout: LockOpt = 60.0,
) -> None:
    """Open a run now, without rows, running (creating the store if need be); log to it with
    `evalstore log RUN METRIC VALUE --step N`, end it with `evalstore run finish RUN`."""
    from evalstore.db.connection import Database, default_path
    from evalstore.errors import InvalidInput
    from evalstore.runs.live import load_pending, open_live_run
    from evalstore.runs.liveness import pid_alive, this_host
    from evalstore.runs.meta import RunMeta
    from evalstore.store.staged import write_store

    if pid is not None and not pid_alive(pid):
        raise InvalidInput(f"--pid {pid}: no such process on this host")
    meta = RunMeta(run, params=param, tags=tag or (), notes=notes,
                   git_commit=True if git_commit is None else git_commit)  # fmt: skip
    path = db or default_path()

    def action(store: Database) -> tuple[list[dict[str, Any]], Any]:
        loaded = load_pending(store)
        return loaded, open_live_run(store, meta, pid=pid, host=this_host(), resume=resume)

    loaded, opened = write_store(path, action, lock_timeout=lock_timeout)
    _said(loaded)
    how = "reopened" if opened.resumed else "opened"
    tied = f", tied to process {pid}" if pid is not None else ""
    at = "" if db is None else f" --db {db}"
    out.print(f"{how} run {opened.ref} (id {opened.run_id}): running{tied}", markup=False)
    out.print(f"log to it:  evalstore log {opened.ref} METRIC VALUE --step N{at}", markup=False)
    out.print(f"finish it:  evalstore run finish {opened.ref} [--failed]{at}", markup=False)


@command("finish", group=run_app)
def finish_cmd(
    run: RunArg,
    failed: Annotated[bool, typer.Option("--failed", help="Mark it failed.")] = False,
    db: DbOpt = None,
    lock_timeout: LockOpt = 60.0,
) -> None:
    """Mark a run opened by `evalstore run new` (or evalstore.init) finished, or failed."""
    from evalstore.db.connection import Database
    from evalstore.runs.live import finish_run, load_pending
    from evalstore.runs.registry import get_run

    with Database(db, lock_timeout=lock_timeout, create=False) as store:
        _said(load_pending(store))
        info = get_run(store, run)
        state = finish_run(store, info["run_id"], "failed" if failed else "finished")
    out.print(
        f"run {info['experiment']}/{info['name']} (id {info['run_id']}): {state['status']}",
        markup=False,
    )


@command("flush", group=run_app)
def flush_cmd(db: DbOpt = None, lock_timeout: LockOpt = 60.0) -> None:
    """Write in the logged values that a process could not write before it ended (the
    store stayed locked), kept in <db>.pending/ beside the store."""
    from evalstore.db.connection import Database
    from evalstore.runs.live import load_pending, pending_dir

    with Database(db, lock_timeout=lock_timeout, create=False) as store:
        loaded = load_pending(store)
        folder: Path = pending_dir(store.path)
    _said(loaded)
    if not loaded:
        out.print(f"nothing waits in {folder}", markup=False)
