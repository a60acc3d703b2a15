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
    with values computed from raw rows. The same RUN METRIC [--step] again replaces it."""
    from evalstore.db.connection import default_path
    from evalstore.errors import InvalidInput
    from evalstore.store.facade import Store

    try:
        number = float(value)
    except ValueError:
        raise InvalidInput(f"value {value!r} of {metric} is not a number") from None
    path = db or default_path()
    if not path.exists():  # a run must exist: no store is made for it
        raise InvalidInput(f"no evalstore database at {path} (ingest a run first, or pass --db)")
    with Store(path, lock_timeout=lock_timeout) as store:
        done = store.log_metric(run, metric, number, step=step)
    at = "" if done["step"] is None else f" at step {done['step']}"
    was = "" if done["replaced"] is None else f" (replaced {done['replaced']:.6g})"
    out.print(
        f"logged {done['metric']} = {done['value']:.6g}{at} for run {done['run']} "
        f"(id {done['run_id']}){was}",
        markup=False,
    )
