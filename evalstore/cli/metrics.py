"""evalstore eval and metrics: computing and reading metric values."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Any

import typer

from evalstore.cli.common import (
    DbOpt,
    Fmt,
    FormatOpt,
    LockOpt,
    ProtocolOpt,
    TiesOpt,
    command,
    emit,
    err,
    progress_bar,
)
from evalstore.cli.compare import MIN_LISTS
from evalstore.errors import EvalstoreError

if TYPE_CHECKING:
    import polars as pl

    from evalstore.store.facade import Store


def _results_table(frame: pl.DataFrame, fmt: Fmt, title: str | None = None) -> None:
    from evalstore import render

    if fmt is Fmt.table:
        interval = ["ci_low", "ci_high"] if "ci_low" in frame.columns else []
        stepped = ["step"] if "step" in frame.columns else []  # runs with training steps
        shown = frame.select(
            "run",
            *stepped,
            "task",
            "metric",
            "protocol",
            "slice",
            "value",
            *interval,
            "n_lists",
            "n_skipped",
            "params",
            "stale",
        )
        emit(shown, fmt, title)
    elif fmt is Fmt.json:
        rows = [
            {**r, "params": json.loads(r["params"]), "stale": bool(r["stale"])}
            for r in frame.to_dicts()
        ]
        typer.echo(json.dumps(render.jsonable(rows), indent=2))
    else:  # LaTeX's caption says what the intervals are
        emit(frame, fmt, caption=title if "ci_low" in frame.columns else None)


@contextlib.contextmanager
def _engine(name: str, source: str | None, master: str, store: Store) -> Iterator[Any]:
    if name == "duckdb":
        yield None
        return
    from evalstore.scale.spark import SparkEngine

    remote = SparkEngine(str(source), store=store, master=master)
    try:
        yield remote
    finally:
        remote.stop()


@command("eval")
def eval_cmd(
    runs: Annotated[
        list[str] | None,
        typer.Argument(help="Runs: NAME, EXPERIMENT/NAME or id:N.", show_default=False),
    ] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric", "-m", help="Metric (repeatable) [default: the task's standard metrics]."
        ),
    ] = None,
    ties: TiesOpt = None,
    protocol: ProtocolOpt = None,
    k: Annotated[
        int | None,
        typer.Option(
            "--k",
            help="Cut-off of precision_at_k / recall_at_k [default: 10], of topk_accuracy "
            "[default: 5] and of the multi-label cp_at_k .. of1_at_k [default: 3].",
        ),
    ] = None,
    by: Annotated[
        list[str] | None,
        typer.Option(
            "--by",
            help="Slice key (sequence, difficulty...), the list noun (class, query, pair, list), "
            "or step: the value at each training step of runs with steps.",
        ),
    ] = None,
    step: Annotated[
        int | None,
        typer.Option(
            "--step",
            help="Of runs with training steps, the value at this step [default: the last].",
        ),
    ] = None,
    sigma: Annotated[
        str | None,
        typer.Option("--sigma", help="precision_at_sigma thresholds in px [default: 3,6,9]."),
    ] = None,
    eps: Annotated[
        str | None,
        typer.Option("--eps", help="homography_accuracy corner thresholds [default: 1,3,5]."),
    ] = None,
    threshold: Annotated[
        str | None,
        typer.Option(
            "--threshold",
            help="mma thresholds in px [default: 1,2,...,10]; the multi-label metrics' "
            "score thresholds, a label predicted at score >= t [default: 0.5; 0 on logits; "
            "negative: --threshold=-1]; pose_auc's degrees [default: 5,10,20], "
            "homography_auc's px [default: 1,3,5], epipolar_precision's and "
            "matching_score's epipolar distance [default: 5e-4], pose_maa_imc's degrees "
            "[default: 10].",
        ),
    ] = None,
    bins: Annotated[
        str | None,
        typer.Option("--bins", help="ece's numbers of equal-width bins [default: 15]."),
    ] = None,
    recompute: Annotated[
        bool, typer.Option("--recompute", help="Recompute even up-to-date cached values.")
    ] = False,
    all_runs: Annotated[bool, typer.Option("--all", help="Every run in the database.")] = False,
    engine: Annotated[
        str, typer.Option("--engine", help="duckdb (this file) | spark (over an export).")
    ] = "duckdb",
    source: Annotated[
        str | None,
        typer.Option("--source", help="With --engine spark: the export folder or URL."),
    ] = None,
    spark_master: Annotated[
        str, typer.Option("--spark-master", help="Spark master URL.")
    ] = "local[*]",
    show_sql: Annotated[
        str | None,
        typer.Option(
            "--show-sql",
            metavar="METRIC",
            help="Print the SQL that computes METRIC (includes expanded; Spark's with "
            "--engine spark) and exit.",
        ),
    ] = None,
    ci: Annotated[
        bool,
        typer.Option("--ci", help="A seeded percentile bootstrap interval of each run's value."),
    ] = False,
    ci_level: Annotated[
        float, typer.Option("--ci-level", help="With --ci: the interval's level.")
    ] = 0.95,
    n_boot: Annotated[
        int, typer.Option("--n-boot", help="With --ci: bootstrap replicates.")
    ] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="With --ci: seed of the resampling.")] = 0,
    resample: Annotated[
        str,
        typer.Option(
            "--resample",
            help=f"With --ci: auto (items within lists below {MIN_LISTS} lists, for ranking "
            "metrics) | lists | items.",
        ),
    ] = "auto",
    db: DbOpt = None,
    lock_timeout: LockOpt = 60.0,
    fmt: FormatOpt = Fmt.table,
) -> None:
    """Compute metrics of runs from their raw rows (cached by the SQL's SHA); with --ci, the
    bootstrap interval of each run's value."""
    from evalstore.cli.cached_eval import light_rows, parse_sweeps, print_rows

    if engine not in ("duckdb", "spark"):
        raise EvalstoreError(f"unknown --engine {engine!r}; use duckdb or spark")
    if ci and engine != "duckdb":
        raise EvalstoreError(f"--ci resamples this store's rows: not with --engine {engine}")
    by_step = "step" in (by or [])
    by = [b for b in by or [] if b != "step"]
    if engine == "duckdb" and show_sql is None and not by and not ci and step is None:
        # cached values, or values their SQL alone computes: without polars, NumPy, pyarrow
        sweeps = {"sigma": sigma, "eps": eps, "threshold": threshold, "bins": bins}
        with progress_bar(fmt is not Fmt.json, "eval") as cb:
            rows = light_rows(runs=runs, metrics=metric, ties=ties, k=k, all_runs=all_runs,
                              sweeps=sweeps, protocol=protocol, db=db,
                              lock_timeout=lock_timeout, recompute=recompute,
                              progress=cb)  # fmt: skip
        if rows is not None:
            print_rows(rows, fmt)
            return
    from evalstore.analysis.evaluate import evaluate
    from evalstore.analysis.intervals import CI
    from evalstore.metrics.registry import get
    from evalstore.store.facade import Store

    if show_sql is not None:
        from evalstore.metrics import protocols
        from evalstore.scale.transpile import spark_sql

        name = get(show_sql).name
        # the registry names the SQL file of each tie policy
        policy = ties or (protocols.get(protocol).ties if protocol else "grouped")
        text = spark_sql(name, policy) if engine == "spark" else get(name).query_for(policy).text
        typer.echo(text, nl=False)
        return
    if engine == "spark" and source is None:
        raise EvalstoreError("--engine spark needs --source DIR (an evalstore export)")
    interval = CI(level=ci_level, replicates=n_boot, seed=seed, resample=resample) if ci else None
    warnings: list[str] = []
    with (
        Store(db, lock_timeout=lock_timeout, create=False, migrate=False) as store,
        progress_bar(fmt is not Fmt.json, "eval") as cb,
        _engine(engine, source, spark_master, store) as remote,
    ):
        frame = evaluate(
            store,
            runs,
            metrics=metric,
            ties=ties,
            k=k,
            by=by,
            recompute=recompute,
            all_runs=all_runs,
            sweeps=parse_sweeps(sigma=sigma, eps=eps, threshold=threshold, bins=bins),
            engine=remote,
            progress=cb,
            protocol=protocol,
            ci=interval,
            warn=warnings.append,
            step=step,
            by_step=by_step,
        )
    for line in warnings:
        err.print(f"Warning: {line}", markup=False)
    title = None if interval is None else _ci_title(frame, interval)
    _results_table(frame, fmt, title)


def _ci_title(frame: pl.DataFrame, ci: Any) -> str:
    """What the intervals are: level, percentile bootstrap, unit(s), replicates, seed."""
    units = sorted({u for u in frame["ci_unit"].to_list() if u is not None}) if frame.height else []
    over = " / ".join(units) or "lists"
    return (
        f"{ci.level:.0%} percentile bootstrap intervals over {over}, "
        f"{ci.replicates:,} replicates, seed {ci.seed}"
    )


@command("metrics")
def metrics_cmd(
    runs: Annotated[
        list[str] | None,
        typer.Argument(help="Runs: NAME, EXPERIMENT/NAME or id:N.", show_default=False),
    ] = None,
    metric: Annotated[
        list[str] | None, typer.Option("--metric", "-m", help="Only this metric (repeatable).")
    ] = None,
    all_runs: Annotated[bool, typer.Option("--all", help="Every run in the database.")] = False,
    db: DbOpt = None,
    lock_timeout: LockOpt = 60.0,
    fmt: FormatOpt = Fmt.table,
) -> None:
    """Show stored metric values; `stale` marks values whose SQL has changed since. Values
    logged with `evalstore log` follow as task `logged`, at their latest step."""
    from evalstore.analysis.evaluate import stored_metrics
    from evalstore.runs.logged import LOGGED_TASK
    from evalstore.store.facade import Store

    with Store(db, read_only=True, lock_timeout=lock_timeout) as store:
        frame = stored_metrics(store, runs, all_runs=all_runs, metrics=metric)
    logged = frame.height > 0 and bool((frame["task"] == LOGGED_TASK).any())
    title = (
        "task logged: values logged with `evalstore log` (at the step in params), not computed "
        "from raw rows"
    )
    _results_table(frame, fmt, title if logged else None)
