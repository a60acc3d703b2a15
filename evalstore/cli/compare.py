"""evalstore compare, check, groups, leaderboard, history: runs and configurations against
each other, and over time."""

from __future__ import annotations

from typing import Annotated, Any

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
    err,
    progress_bar,
)
from evalstore.errors import EvalstoreError

#: evalstore.analysis.statistics.MIN_LISTS, written here so that --help does not import NumPy
#: (the test of the help text checks the two agree)
MIN_LISTS = 10

GroupOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--group",
        "-g",
        help="A configuration: the runs whose params hold KEY=VALUE[,KEY=VALUE...], differing "
        "only in --seed-param (repeatable; after the runs).",
    ),
]
SeedParamOpt = Annotated[
    str,
    typer.Option("--seed-param", help="The parameter that tells a configuration's runs apart."),
]
ExperimentOpt = Annotated[
    str | None, typer.Option("--experiment", "-e", help="Only this experiment.")
]
ResampleOpt = Annotated[
    str,
    typer.Option(
        "--resample",
        help=f"auto (items within lists below {MIN_LISTS} lists, for ranking metrics) | lists "
        "| items.",
    ),
]
GroupByOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--group-by", help="Group on these params only (repeatable) instead of all but the seed."
    ),
]


@command("compare")
def compare_cmd(
    runs: Annotated[
        list[str] | None,
        typer.Argument(
            help="Runs; the first is the baseline (else the first -g group).", show_default=False
        ),
    ] = None,
    group: GroupOpt = None,
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric", "-m", help="Metric (repeatable) [default: the task's standard metrics]."
        ),
    ] = None,
    ties: TiesOpt = None,
    protocol: ProtocolOpt = None,
    k: Annotated[int | None, typer.Option("--k", help="Cut-off of precision/recall at k.")] = None,
    experiment: ExperimentOpt = None,
    seed_param: SeedParamOpt = "seed",
    resample: ResampleOpt = "auto",
    n_boot: Annotated[int, typer.Option("--n-boot", help="Bootstrap resamples.")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the resampling.")] = 0,
    step: Annotated[
        int | None,
        typer.Option(
            "--step",
            help="Runs with training steps: compare at this step [default: the last step "
            "they all evaluated].",
        ),
    ] = None,
    db: DbOpt = None,
    lock_timeout: LockOpt = 60.0,
    fmt: FormatOpt = Fmt.table,
) -> None:
    """Compare runs or configurations (-g) list by list: differences, 95% CI and its caveat,
    p-values, Holm's p_adj, effect size; runs with training steps at their last common step."""
    from evalstore.analysis.compare import COMPARE_COLUMNS, compare
    from evalstore.analysis.compare_caveats import with_caveats
    from evalstore.analysis.step_history import compare_at_step
    from evalstore.store.facade import Store

    with (
        Store(db, lock_timeout=lock_timeout, create=False, migrate=False) as store,
        progress_bar(fmt is Fmt.table, "compare") as cb,
    ):
        options: dict[str, Any] = dict(
            experiment=experiment, seed_param=seed_param, metrics=metric, ties=ties, k=k,
            n_boot=n_boot, seed=seed, progress=cb, protocol=protocol, resample=resample,
        )  # fmt: skip
        stepped = None
        if runs and not group:
            stepped = compare_at_step(store, runs, step=step, **options)
        elif step is not None:
            raise EvalstoreError("--step compares runs with training steps: name runs, not -g")
        if stepped is not None:
            frame, at = stepped
            err.print(f"compared at step {at}", markup=False)
        else:
            frame = compare(store, runs or [], groups=group or [], **options)
    frame = with_caveats(frame)  # clipped to the metric's range; intervals of < 5 lists warned
    if fmt in (Fmt.table, Fmt.latex, Fmt.md):
        frame = frame.select(c for c in ["step", *COMPARE_COLUMNS, "caveat"]
                             if c != "higher_is_better" and c in frame.columns)  # fmt: skip
        if frame["n_runs"].max() == 1 and frame["baseline_runs"].max() == 1:
            frame = frame.drop("n_runs", "baseline_runs")  # runs, not configurations
    caption = "Differences to the baseline, 95% intervals, Holm-adjusted p"
    title = "task logged: values logged with `evalstore log`, no per-list statistics: no test"
    emit(frame, fmt, title if (frame["task"] == "logged").any() else None, caption=caption)


@command("diff")
def diff_cmd(
    run_a: RunArg,
    run_b: RunArg,
    task: Annotated[
        str | None, typer.Option("--task", help="The task [default: the one the runs share].")
    ] = None,
    metric: Annotated[
        str | None,
        typer.Option("--metric", "-m", help="A per-list metric [default: the task's first]."),
    ] = None,
    items: Annotated[
        str | None,
        typer.Option(
            "--items", help="Within this list (its group_id): the items whose rank moved."
        ),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="At most this many rows.")] = 20,
    iou: Annotated[
        float | None,
        typer.Option(
            "--iou",
            help="Detection runs: the IoU threshold at which an object is found [default: 0.5].",
            show_default=False,
        ),
    ] = None,
    db: DbOpt = None,
    lock_timeout: LockOpt = 60.0,
    fmt: FormatOpt = Fmt.table,
) -> None:
    """What changed between two runs: the lists whose value moved most (value in each run,
    the difference), or with --items the items of one list whose rank moved (of detection
    runs, --items CATEGORY: its objects, found by one run and missed by the other first)."""
    from evalstore.analysis.diff import diff_items, diff_lists
    from evalstore.store.facade import Store

    with Store(db, lock_timeout=lock_timeout, create=False, migrate=False) as store:
        if items is not None:
            frame = diff_items(store, run_a, run_b, items, task=task, limit=limit, iou=iou)
            title = f"{run_a} -> {run_b}: items of list {items} by rank moved"
            if "det_a" in frame.columns:
                at = 0.5 if iou is None else iou
                title = f"{run_a} -> {run_b}: objects of {items} found at IoU {at:.2f} or not"
        else:
            frame = diff_lists(store, run_a, run_b, task=task, metric=metric, limit=limit)
            shown = frame["metric"][0] if frame.height else metric or ""
            title = f"{run_a} -> {run_b}: lists by {shown} moved (b - a)"
    emit(frame, fmt, title=title)


@command("check")
def check_cmd(
    run: Annotated[
        str | None,
        typer.Argument(help="Run: NAME, EXPERIMENT/NAME or id:N (or -g).", show_default=False),
    ] = None,
    baseline: Annotated[
        str | None, typer.Option("--baseline", "-b", help="The run to compare against.")
    ] = None,
    group: Annotated[
        str | None,
        typer.Option("--group", "-g", help="Check a configuration (KEY=VALUE,...) instead."),
    ] = None,
    baseline_group: Annotated[
        str | None,
        typer.Option(
            "--baseline-group", "-G", help="Compare against a configuration (KEY=VALUE,...)."
        ),
    ] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric", "-m", help="Metric (repeatable) [default: the task's standard metrics]."
        ),
    ] = None,
    min_effect: Annotated[
        float, typer.Option("--min-effect", help="Tolerated worsening before it counts.")
    ] = 0.0,
    alpha: Annotated[
        float, typer.Option("--alpha", help="Level of the Holm-adjusted test.")
    ] = 0.05,
    experiment: ExperimentOpt = None,
    seed_param: SeedParamOpt = "seed",
    resample: ResampleOpt = "auto",
    n_boot: Annotated[int, typer.Option("--n-boot", help="Bootstrap resamples.")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the resampling.")] = 0,
    protocol: ProtocolOpt = None,
    db: DbOpt = None,
    lock_timeout: LockOpt = 60.0,
) -> None:
    """Regression gate for CI: exit 3 when a metric is worse by more than --min-effect with a
    Holm-adjusted p-value below --alpha (the test of `compare`), else 0. One line per metric
    says why; the last says how many comparisons were corrected for."""
    from evalstore.analysis.gate import check
    from evalstore.store.facade import Store

    with Store(db, lock_timeout=lock_timeout, create=False, migrate=False) as store:
        regressed, lines, _ = check(
            store,
            run,
            baseline,
            group=group,
            baseline_group=baseline_group,
            experiment=experiment,
            seed_param=seed_param,
            metrics=metric,
            min_effect=min_effect,
            alpha=alpha,
            n_boot=n_boot,
            seed=seed,
            protocol=protocol,
            resample=resample,
        )
    for line in lines:
        typer.echo(line)
    if regressed:
        raise typer.Exit(code=3)


@command("groups")
def groups_cmd(
    experiment: ExperimentOpt = None,
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric", "-m", help="Metric (repeatable) [default: the task's standard metrics]."
        ),
    ] = None,
    seed_param: SeedParamOpt = "seed",
    group_by: GroupByOpt = None,
    protocol: ProtocolOpt = None,
    db: DbOpt = None,
    lock_timeout: LockOpt = 60.0,
    fmt: FormatOpt = Fmt.table,
) -> None:
    """Configurations (runs equal but for their seed): per metric n_runs, mean, sd, the 95%
    t interval across seeds (clipped to the metric's range; ``caveat`` says so), min, max and
    the runs."""
    import polars as pl

    from evalstore.analysis.configurations import GROUP_COLUMNS, groups
    from evalstore.analysis.leaderboard import pivot
    from evalstore.store.facade import Store

    with Store(db, lock_timeout=lock_timeout, create=False, migrate=False) as store:
        frame = groups(
            store,
            experiment=experiment,
            metrics=metric,
            seed_param=seed_param,
            group_by=group_by,
            protocol=protocol,
        )
    if fmt in (Fmt.table, Fmt.md):
        frame = frame.select(
            *(c for c in GROUP_COLUMNS if c not in ("config", "protocol")), "caveat"
        )
        frame = frame.with_columns(pl.col("runs").list.join(", "))
    elif fmt is Fmt.latex:
        board = pivot(frame)
        emit(board.wide(), fmt, higher=board.higher, caption="Mean ± sd across seeds")
        return
    else:
        frame = frame.select([*GROUP_COLUMNS, "seeds", "caveat"])
    emit(frame, fmt)


@command("leaderboard")
def leaderboard_cmd(
    experiment: ExperimentOpt = None,
    runs: Annotated[
        bool, typer.Option("--runs", help="One row per run instead of per configuration.")
    ] = False,
    seed_param: SeedParamOpt = "seed",
    group_by: GroupByOpt = None,
    protocol: ProtocolOpt = None,
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric",
            "-m",
            help="The columns: metrics (map, ndcg_at_k, ...) in place of the headline ones, "
            "the first ranking the rows, or values logged with evalstore log, added to them "
            "(repeatable).",
        ),
    ] = None,
    db: DbOpt = None,
    lock_timeout: LockOpt = 60.0,
    fmt: FormatOpt = Fmt.table,
) -> None:
    """Configurations (or --runs) x headline metrics of each task, mean ± sd across seeds,
    the best of each column in bold, ranked by the first; -m names the metrics instead, or
    adds logged values."""
    from evalstore.analysis.leaderboard import leaderboard
    from evalstore.store.facade import Store

    with Store(db, lock_timeout=lock_timeout, create=False, migrate=False) as store:
        board = leaderboard(
            store,
            experiment=experiment,
            seed_param=seed_param,
            group_by=group_by,
            runs=runs,
            protocol=protocol,
            metrics=metric or (),
        )
    frame = board.wide()
    if experiment is not None or frame["experiment"].n_unique() == 1:
        frame = frame.drop("experiment")
    frame = frame.select(c for c in frame.columns if frame[c].null_count() < frame.height)
    caption = "Headline metrics, mean ± sd across seeds; best per column in bold. Protocol: " + (
        protocol or "evalstore default"
    )
    emit(frame, fmt, higher=board.higher, caption=caption)


@command("history")
def history_cmd(
    metric: Annotated[str, typer.Option("--metric", "-m", help="Metric (map, ap_voc07, ...).")],
    experiment: ExperimentOpt = None,
    by: Annotated[
        str, typer.Option("--by", help="time (created_at) | step (each run's training steps).")
    ] = "time",
    run: Annotated[str | None, typer.Option("--run", help="With --by step: this run.")] = None,
    protocol: ProtocolOpt = None,
    db: DbOpt = None,
    lock_timeout: LockOpt = 60.0,
    fmt: FormatOpt = Fmt.table,
) -> None:
    """A metric over time (created_at) for the runs of an experiment, with the best so far;
    --by step: over the training steps of runs with steps (a logged value, such as a loss, at
    the steps it was logged at)."""
    from evalstore.analysis.step_history import history_of
    from evalstore.store.facade import Store

    with Store(db, lock_timeout=lock_timeout, create=False, migrate=False) as store:
        frame = history_of(store, metric, by=by, run=run, experiment=experiment, protocol=protocol)
    emit(frame, fmt)


@command("protocols")
def protocols_cmd(fmt: FormatOpt = Fmt.table) -> None:
    """The official protocols --protocol takes: the reference code each reproduces (repository,
    file, commit), its metrics, tie policy, pose estimation and what differs from the default."""
    import polars as pl

    from evalstore.metrics.protocols import PROTOCOLS

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
            "pose estimation": "" if p.pose is None else p.pose.describe(),
            "differs from the default": p.differs,
        }
        for p in PROTOCOLS.values()
    ]
    drop = ("repository", "path", "commit") if fmt is Fmt.table else ("reference",)
    emit(pl.DataFrame(rows).drop(*drop), fmt)
