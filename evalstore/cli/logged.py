"""evalstore log: a number computed outside evalstore (a training loss, an accuracy)."""

from __future__ import annotations

from typing import Annotated

import typer

from evalstore.cli.common import DbOpt, LockOpt, RunArg, command, out


@command("log", context_settings={"ignore_unknown_options": True})  # VALUE may be -0.5
def log_cmd(
    run: RunArg,
    metric: Annotated[
        str,
        typer.Argument(
            help="Its name: letters, digits and _ (not a computed metric's, as map).",
            show_default=False,
        ),
    ],
    value: Annotated[str, typer.Argument(help="A finite number.", show_default=False)],
    step: Annotated[
        int | None,
        typer.Option("--step", help="The training step (>= 0) it is the value at."),
    ] = None,
    db: DbOpt = None,
    lock_timeout: LockOpt = 60.0,
) -> None:
    """Record a value computed outside evalstore for a run (a training loss, an accuracy):
    shown by metrics, history, leaderboard and the dashboards as task `logged`, never mixed
    with values computed from raw rows. The same RUN METRIC [--step] again replaces it. The
    run must exist (`evalstore run new RUN` opens one); a running run's heartbeat is bumped."""
    from evalstore.db.connection import default_path
    from evalstore.errors import InvalidInput, RunNotFound
    from evalstore.runs.live import load_pending, touch_run
    from evalstore.runs.logged import log_metric
    from evalstore.store.facade import Store

    try:
        number = float(value)
    except ValueError:
        raise InvalidInput(f"value {value!r} of {metric} is not a number") from None
    path = db or default_path()
    opens = f"`evalstore run new {run}{'' if db is None else f' --db {db}'}` opens it"
    if not path.exists():  # nothing is made by surprise: no store, no run
        raise RunNotFound(f"no run {run!r}: there is no evalstore database at {path}; {opens}")
    with Store(path, lock_timeout=lock_timeout, create=False) as store:
        load_pending(store)
        try:
            done = log_metric(store, run, metric, number, step=step)
        except RunNotFound as exc:
            if not str(exc).startswith("no run"):  # ambiguous: the user picks
                raise
            raise RunNotFound(f"{exc}; {opens}") from None
        touch_run(store, done["run_id"])
    at = "" if done["step"] is None else f" at step {done['step']}"
    was = "" if done["replaced"] is None else f" (replaced {done['replaced']:.6g})"
    out.print(
        f"logged {done['metric']} = {done['value']:.6g}{at} for run {done['run']} "
        f"(id {done['run_id']}){was}",
        markup=False,
    )
