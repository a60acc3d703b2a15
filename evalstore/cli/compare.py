"""evalstore compare, check, history: runs against runs, and over time."""

from __future__ import annotations

from typing import Annotated

import polars as pl
import typer

from evalstore.cli.common import (
    DbOpt,
    Fmt,
    FormatOpt,
    LockOpt,
    ProtocolOpt,
    RunArg,
    TiesOpt,
    command,
    emit,
    progress_bar,
)
from evalstore.compare import COMPARE_COLUMNS, check, compare, history
from evalstore.protocols import PROTOCOLS
from evalstore.store import Store


@command("compare")
def compare_cmd(
    runs: Annotated[
        list[str], typer.Argument(help="Runs; the first is the baseline.", show_default=False)
    ],
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric", "-m", help="Metric (repeatable) [default: the task's standard metrics]."
        ),
    ] = None,
    ties: TiesOpt = None,
    protocol: ProtocolOpt = None,
    k: Annotated[int | None, typer.Option("--k", help="Cut-off of precision/recall at k.")] = None,
    n_boot: Annotated[int, typer.Option("--n-boot", help="Bootstrap resamples.")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the resampling.")] = 0,
    db: DbOpt = None,
    lock_timeout: LockOpt = 10.0,
    fmt: FormatOpt = Fmt.table,
) -> None:
    """Compare runs list by list: differences, 95% paired bootstrap CI, randomisation p-value."""
    with (
        Store(db, lock_timeout=lock_timeout) as store,
        progress_bar(fmt is not Fmt.json, "compare") as cb,
    ):
        frame = compare(
            store,
            runs,
            metrics=metric,
            ties=ties,
            k=k,
            n_boot=n_boot,
            seed=seed,
            progress=cb,
            protocol=protocol,
        )
    if fmt is Fmt.table:
        frame = frame.select(c for c in COMPARE_COLUMNS if c != "higher_is_better")
    emit(frame, fmt)


@command("check")
def check_cmd(
    run: RunArg,
    baseline: Annotated[str, typer.Option("--baseline", "-b", help="The run to compare against.")],
    metric: Annotated[
        list[str] | None, typer.Option("--metric", "-m", help="Metric (repeatable).")
    ] = None,
    min_effect: Annotated[
        float, typer.Option("--min-effect", help="Tolerated worsening before it counts.")
    ] = 0.0,
    n_boot: Annotated[int, typer.Option("--n-boot", help="Bootstrap resamples.")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the resampling.")] = 0,
    protocol: ProtocolOpt = None,
    db: DbOpt = None,
    lock_timeout: LockOpt = 10.0,
) -> None:
    """Regression gate for CI: exit 3 when a metric is worse beyond --min-effect with a 95% CI
    that excludes zero, else 0. One line per metric says why."""
    with Store(db, lock_timeout=lock_timeout) as store:
        regressed, lines, _ = check(
            store,
            run,
            baseline,
            metrics=metric,
            min_effect=min_effect,
            n_boot=n_boot,
            seed=seed,
            protocol=protocol,
        )
    for line in lines:
        typer.echo(line)
    if regressed:
        raise typer.Exit(code=3)


@command("history")
def history_cmd(
    metric: Annotated[str, typer.Option("--metric", "-m", help="Metric (map, ap_voc07, ...).")],
    experiment: Annotated[
        str | None, typer.Option("--experiment", "-e", help="Only this experiment.")
    ] = None,
    protocol: ProtocolOpt = None,
    db: DbOpt = None,
    lock_timeout: LockOpt = 10.0,
    fmt: FormatOpt = Fmt.table,
) -> None:
    """A metric over time (created_at) for the runs of an experiment, with the best so far."""
    with Store(db, lock_timeout=lock_timeout) as store:
        frame = history(store, metric, experiment=experiment, protocol=protocol)
    emit(frame, fmt)


@command("protocols")
def protocols_cmd(fmt: FormatOpt = Fmt.table) -> None:
    """The official protocols --protocol takes: the reference code each reproduces
    (repository, file, commit), its metrics and tie policy, and what differs from the default."""
    rows = [
        {
            "protocol": p.name,
            "reproduces": p.title,
            "reference": str(p.source) if fmt is Fmt.table else None,
            "repository": p.source.repo,
            "path": p.source.path,
            "commit": p.source.commit,
            "metrics": "; ".join(f"{t}: {', '.join(m)}" for t, m in p.metrics.items()),
            "ties": p.ties,
            "unretrieved lists": p.unretrieved,
            "differs from the default": p.differs,
        }
        for p in PROTOCOLS.values()
    ]
    frame = pl.DataFrame(rows)
    if fmt is Fmt.table:
        frame = frame.drop("repository", "path", "commit")
    else:
        frame = frame.drop("reference")
    emit(frame, fmt)
