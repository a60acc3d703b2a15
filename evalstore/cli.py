"""The ``evalstore`` command line: thin commands over the library.

This is the only module that prints or exits. Errors raised on purpose by the library
(:class:`~evalstore.errors.EvalstoreError`) become one ``Error: ...`` line on stderr and exit
code 1; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sys
import time
from collections.abc import Callable, Iterator
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import polars as pl
import typer
from rich.console import Console

from evalstore import render
from evalstore.errors import EvalstoreError
from evalstore.store import Progress, Store, default_path

app = typer.Typer(
    name="evalstore",
    help="Track evaluation runs in DuckDB and compute exact metrics with SQL.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

# Piped output keeps whole rows rather than folding them at 80 columns.
out = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 220)
err = Console(stderr=True, highlight=False, soft_wrap=True)

F = TypeVar("F", bound=Callable[..., Any])


class Fmt(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"
    md = "md"


DbOpt = Annotated[
    Path | None,
    typer.Option(
        "--db", envvar="EVALSTORE_DB", help="Database file [default: ./evalstore.duckdb]."
    ),
]
LockOpt = Annotated[
    float,
    typer.Option(
        "--lock-timeout", help="Seconds to wait while another process holds the database."
    ),
]
FormatOpt = Annotated[Fmt, typer.Option("--format", "-f", help="Output format.")]
RunArg = Annotated[
    str, typer.Argument(help="Run: NAME, EXPERIMENT/NAME or id.", show_default=False)
]


def command(*args: Any, **kwargs: Any) -> Callable[[F], F]:
    """Register a command whose library errors end as one line and exit code 1."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*a: Any, **kw: Any) -> Any:
            try:
                return fn(*a, **kw)
            except EvalstoreError as exc:
                err.print(f"Error: {exc}", markup=False)
                raise typer.Exit(code=1) from None

        app.command(*args, **kwargs)(wrapper)
        return fn

    return decorate


def emit(frame: pl.DataFrame, fmt: Fmt, title: str | None = None) -> None:
    """Print a result frame in the chosen format."""
    if fmt is Fmt.table:
        out.print(render.rich_table(frame, title))
    else:
        typer.echo(render.to_text(frame, fmt.value))


@contextlib.contextmanager
def progress_bar(enabled: bool, description: str) -> Iterator[Progress | None]:
    """A transient rich progress display on stderr, shown only on a terminal after 1 s."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.progress import Progress as RichProgress
    from rich.progress import SpinnerColumn, TextColumn, TimeElapsedColumn

    started = time.monotonic()
    bar: RichProgress | None = None
    task_id = None

    def update(stage: str, done: int, total: int | None) -> None:
        nonlocal bar, task_id
        if bar is None:
            if time.monotonic() - started < 1.0:
                return
            bar = RichProgress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                TextColumn("{task.completed:,} rows"),
                TimeElapsedColumn(),
                console=err,
                transient=True,
            )
            bar.start()
            task_id = bar.add_task(description, total=total)
        assert task_id is not None  # set together with bar
        bar.update(task_id, completed=done, total=total, description=f"{description}: {stage}")

    try:
        yield update
    finally:
        if bar is not None:
            bar.stop()


@contextlib.contextmanager
def _removed_on_error(path: Path, fresh: bool) -> Iterator[None]:
    """A database file that a failed command created is removed: nothing is left behind."""
    try:
        yield
    except EvalstoreError:
        if fresh:
            for leftover in (path, path.with_name(path.name + ".wal")):
                leftover.unlink(missing_ok=True)
        raise


# -- commands ----------------------------------------------------------------------------


@command("ingest")
def ingest_cmd(
    files: Annotated[
        list[Path],
        typer.Argument(help="Parquet, CSV/TSV, NDJSON or .npz files.", show_default=False),
    ],
    task: Annotated[
        str,
        typer.Option(
            "--task",
            "-t",
            help="verification | matching | retrieval | classification | keypoints | outcomes.",
        ),
    ],
    run: Annotated[str, typer.Option("--run", "-r", help="Run name: NAME or EXPERIMENT/NAME.")],
    experiment: Annotated[
        str | None,
        typer.Option(
            "--experiment", "-e", help="Experiment of a bare run name [default: default]."
        ),
    ] = None,
    fmt: Annotated[
        str | None, typer.Option("--format", help="File format, overriding the extension.")
    ] = None,
    column: Annotated[
        list[str] | None,
        typer.Option("--column", "-c", help="OURS=THEIRS column mapping, e.g. score=distance."),
    ] = None,
    negate_score: Annotated[
        bool, typer.Option("--negate-score", help="Store -score (for distances).")
    ] = False,
    labels: Annotated[
        str, typer.Option("--labels", help="Label convention: pm1 (+1/-1/0) | 01 | bool.")
    ] = "pm1",
    groups: Annotated[
        Path | None,
        typer.Option("--groups", help="Per-list metadata: group_id, n_positives, slice columns."),
    ] = None,
    voc_gt: Annotated[
        Path | None,
        typer.Option("--voc-gt", help="With --format voc: folder of <class>_<set>.txt truth."),
    ] = None,
    pairs: Annotated[
        Path | None,
        typer.Option("--pairs", help="keypoints: pair_id, h11..h33, width, height, slices."),
    ] = None,
    homography_dir: Annotated[
        Path | None,
        typer.Option("--homography-dir", help="keypoints: a 3x3 homography file per pair."),
    ] = None,
    disparity_dir: Annotated[
        Path | None,
        typer.Option("--disparity-dir", help="keypoints: a disparity map per pair (.npy, .png)."),
    ] = None,
    disparity_scale: Annotated[
        float | None,
        typer.Option("--disparity-scale", help="Map value -> px [default: 1 .npy, 1/256 .png]."),
    ] = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="Replace a run of the same name atomically.")
    ] = False,
    append: Annotated[
        bool, typer.Option("--append", help="Add this task to an existing run.")
    ] = False,
    param: Annotated[
        list[str] | None,
        typer.Option("--param", "-p", help="Run parameter key=value (JSON values stay typed)."),
    ] = None,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", help="Tag the run (repeatable).")
    ] = None,
    notes: Annotated[str | None, typer.Option("--notes", help="Free text notes.")] = None,
    created_at: Annotated[
        str | None, typer.Option("--created-at", help="Backfill the run's time (ISO 8601).")
    ] = None,
    git_commit: Annotated[
        str | None,
        typer.Option("--git-commit", help="Commit to record [default: the current directory's]."),
    ] = None,
    db: DbOpt = None,
    lock_timeout: LockOpt = 10.0,
    output: Annotated[
        Fmt, typer.Option("--output-format", help="How to print the summary.")
    ] = Fmt.table,
) -> None:
    """Ingest ranked lists (scores and labels) into a new run."""
    path = db or default_path()
    fresh = not path.exists()
    with (
        _removed_on_error(path, fresh),
        Store(path, lock_timeout=lock_timeout) as store,
        progress_bar(output is not Fmt.json, "ingest") as cb,
    ):
        result = store.ingest(
            files,
            task=task,
            run=run,
            experiment=experiment,
            fmt=fmt,
            columns=column,
            negate_score=negate_score,
            labels=labels,
            groups=groups,
            voc_gt=voc_gt,
            pairs=pairs,
            replace=replace,
            append=append,
            params=param,
            tags=tag or (),
            notes=notes,
            created_at=created_at,
            git_commit=git_commit if git_commit is not None else True,
            progress=cb,
            **{
                k: v
                for k, v in (
                    ("homography_dir", homography_dir),
                    ("disparity_dir", disparity_dir),
                    ("disparity_scale", disparity_scale),
                )
                if v is not None
            },
        )
    if output is Fmt.table:
        verb = "replaced" if result.replaced else "ingested"
        out.print(
            f"{verb} run {result.ref} (id {result.run_id}): {result.rows:,} {result.task} rows "
            f"in {result.lists:,} list(s), {result.not_retrieved:,} not retrieved",
            markup=False,
        )
    else:
        emit(pl.DataFrame([vars(result)]), output)


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
        typer.echo(json.dumps(render._jsonable(rows), indent=2))
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
        typer.echo(json.dumps(render._jsonable(info), indent=2, default=str))
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
        {"field": [r[0] for r in rows], "value": [render._cell(r[1]) for r in rows]}
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


def _results_table(frame: pl.DataFrame, fmt: Fmt) -> None:
    if fmt is Fmt.table:
        shown = frame.select(
            "run", "task", "metric", "slice", "value", "n_lists", "n_skipped", "params", "stale"
        )
        emit(shown, fmt)
    elif fmt is Fmt.json:
        rows = [
            {**r, "params": json.loads(r["params"]), "stale": bool(r["stale"])}
            for r in frame.to_dicts()
        ]
        typer.echo(json.dumps(render._jsonable(rows), indent=2))
    else:
        emit(frame, fmt)


def _sweeps(**given: str | None) -> dict[str, list[float]]:
    out = {}
    for name, text in given.items():
        if text is None:
            continue
        try:
            out[name] = [float(v) for v in text.split(",") if v.strip()]
        except ValueError:
            raise EvalstoreError(
                f"--{name} {text!r} is not a comma-separated list of numbers"
            ) from None
    return out


@command("eval")
def eval_cmd(
    runs: Annotated[
        list[str] | None,
        typer.Argument(help="Runs: NAME, EXPERIMENT/NAME or id.", show_default=False),
    ] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric", "-m", help="Metric (repeatable) [default: the task's standard metrics]."
        ),
    ] = None,
    ties: Annotated[
        str, typer.Option("--ties", help="grouped | optimistic | pessimistic | input.")
    ] = "grouped",
    k: Annotated[
        int | None,
        typer.Option("--k", help="Cut-off of precision_at_k / recall_at_k [default: 10]."),
    ] = None,
    by: Annotated[
        list[str] | None,
        typer.Option(
            "--by",
            help="Slice key (sequence, difficulty...) or the list noun (class, query, pair, list).",
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
    recompute: Annotated[
        bool, typer.Option("--recompute", help="Recompute even up-to-date cached values.")
    ] = False,
    all_runs: Annotated[bool, typer.Option("--all", help="Every run in the database.")] = False,
    db: DbOpt = None,
    lock_timeout: LockOpt = 10.0,
    fmt: FormatOpt = Fmt.table,
) -> None:
    """Compute metrics of runs from their raw rows (cached by the SQL's SHA)."""
    from evalstore.evaluate import evaluate

    with (
        Store(db, lock_timeout=lock_timeout) as store,
        progress_bar(fmt is not Fmt.json, "eval") as cb,
    ):
        frame = evaluate(
            store,
            runs,
            metrics=metric,
            ties=ties,
            k=k,
            by=by or (),
            recompute=recompute,
            all_runs=all_runs,
            sweeps=_sweeps(sigma=sigma, eps=eps),
            progress=cb,
        )
    _results_table(frame, fmt)


@command("metrics")
def metrics_cmd(
    runs: Annotated[
        list[str] | None,
        typer.Argument(help="Runs: NAME, EXPERIMENT/NAME or id.", show_default=False),
    ] = None,
    metric: Annotated[
        list[str] | None, typer.Option("--metric", "-m", help="Only this metric (repeatable).")
    ] = None,
    all_runs: Annotated[bool, typer.Option("--all", help="Every run in the database.")] = False,
    db: DbOpt = None,
    lock_timeout: LockOpt = 10.0,
    fmt: FormatOpt = Fmt.table,
) -> None:
    """Show stored metric values; `stale` marks values whose SQL has changed since."""
    from evalstore.evaluate import stored_metrics

    with Store(db, read_only=True, lock_timeout=lock_timeout) as store:
        frame = stored_metrics(store, runs, all_runs=all_runs, metrics=metric)
    _results_table(frame, fmt)


@command("sql")
def sql_cmd(
    query: Annotated[str, typer.Argument(help="A SQL query (the database is opened read-only).")],
    param: Annotated[
        list[str] | None,
        typer.Option("--param", "-p", help="Bind $name: name=value (JSON values stay typed)."),
    ] = None,
    fmt: Annotated[
        str, typer.Option("--format", "-f", help="table | csv | json | md | parquet.")
    ] = "table",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file (parquet needs it).")
    ] = None,
    db: DbOpt = None,
    lock_timeout: LockOpt = 10.0,
) -> None:
    """Run any SQL query on a read-only connection (views: v_runs, v_metrics, v_lists)."""
    from evalstore.sql import run_sql, write_result

    with Store(db, read_only=True, lock_timeout=lock_timeout) as store:
        frame = run_sql(store, query, param)
    if output is not None or fmt == "parquet":
        path = write_result(frame, fmt, output)
        err.print(f"wrote {frame.height:,} rows to {path}", markup=False)
    elif fmt in ("table", "json", "csv", "md"):
        emit(frame, Fmt(fmt))
    else:
        raise EvalstoreError(f"unknown --format {fmt!r}; use table, csv, json, md or parquet")


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
    ties: Annotated[str, typer.Option("--ties", help="Tie policy of ranking metrics.")] = "grouped",
    k: Annotated[int | None, typer.Option("--k", help="Cut-off of precision/recall at k.")] = None,
    n_boot: Annotated[int, typer.Option("--n-boot", help="Bootstrap resamples.")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the resampling.")] = 0,
    db: DbOpt = None,
    lock_timeout: LockOpt = 10.0,
    fmt: FormatOpt = Fmt.table,
) -> None:
    """Compare runs list by list: differences, 95% paired bootstrap CI, randomisation p-value."""
    from evalstore.compare import compare

    with (
        Store(db, lock_timeout=lock_timeout) as store,
        progress_bar(fmt is not Fmt.json, "compare") as cb,
    ):
        frame = compare(
            store, runs, metrics=metric, ties=ties, k=k, n_boot=n_boot, seed=seed, progress=cb
        )
    if fmt is Fmt.table:
        frame = frame.select(
            "run",
            "baseline",
            "task",
            "metric",
            "params",
            "baseline_value",
            "value",
            "diff",
            "ci_low",
            "ci_high",
            "p_value",
            "wins",
            "ties",
            "losses",
            "n_lists",
        )
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
    db: DbOpt = None,
    lock_timeout: LockOpt = 10.0,
) -> None:
    """Regression gate for CI: exit 3 when a metric is worse beyond --min-effect with a 95% CI
    that excludes zero, else 0. One line per metric says why."""
    from evalstore.compare import check

    with Store(db, lock_timeout=lock_timeout) as store:
        regressed, lines, _ = check(
            store, run, baseline, metrics=metric, min_effect=min_effect, n_boot=n_boot, seed=seed
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
    db: DbOpt = None,
    lock_timeout: LockOpt = 10.0,
    fmt: FormatOpt = Fmt.table,
) -> None:
    """A metric over time (created_at) for the runs of an experiment, with the best so far."""
    from evalstore.compare import history

    with Store(db, lock_timeout=lock_timeout) as store:
        frame = history(store, metric, experiment=experiment)
    emit(frame, fmt)


@command("dashboard")
def dashboard_cmd(
    experiment: Annotated[
        list[str] | None,
        typer.Option("--experiment", "-e", help="Only the runs of this experiment (repeatable)."),
    ] = None,
    runs: Annotated[
        list[str] | None,
        typer.Option(
            "--runs",
            "-r",
            help="Only this run (repeatable); comparisons use the first as baseline.",
        ),
    ] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder.")] = Path(
        "dashboards-out"
    ),
    spec: Annotated[
        list[Path] | None,
        typer.Option(
            "--spec", help="Dashboard spec, TOML (repeatable) [default: the built-in ones]."
        ),
    ] = None,
    evaluate: Annotated[
        bool,
        typer.Option(
            "--eval/--no-eval", help="Compute missing metrics first (--no-eval: read-only)."
        ),
    ] = True,
    db: DbOpt = None,
    lock_timeout: LockOpt = 10.0,
) -> None:
    """Render dashboards to static HTML pages that work offline (see docs/dashboards.md)."""
    from evalstore import dashboards

    path = db or default_path()
    if not path.exists():
        raise EvalstoreError(f"no evalstore database at {path} (ingest a run first, or pass --db)")
    chosen = {"experiments": experiment or (), "runs": runs or ()}
    with (
        Store(path, read_only=not evaluate, lock_timeout=lock_timeout) as store,
        progress_bar(True, "dashboards") as cb,
    ):
        if evaluate:
            dashboards.evaluate_selected(store, **chosen, progress=cb)
        pages = dashboards.write_dashboards(store, out, specs=spec, **chosen, progress=cb)
    typer.echo(f"wrote {len(pages) - 1} dashboard(s): {pages[0]}")


@command("demo")
def demo_cmd(
    db: DbOpt = None,
    out: Annotated[Path, typer.Option("--out", help="Folder for the dashboards.")] = Path(
        "dashboards-out"
    ),
    quick: Annotated[
        bool, typer.Option("--quick", help="A smaller demo (every task, fewer runs).")
    ] = False,
    lock_timeout: LockOpt = 10.0,
) -> None:
    """Build a database of real evaluation runs (digits classifiers, HPatches-style
    descriptors on real photographs), compute their metrics and write dashboards."""
    from evalstore import demo

    path = db or default_path()
    with Store(path, lock_timeout=lock_timeout) as store, progress_bar(True, "demo") as cb:
        result = demo.build(store, out=out, quick=quick, progress=cb)
        frame = store.runs()
    emit(
        frame.select("run_id", "experiment", "name", "created_at", "tasks", "n_rows", "tags"),
        Fmt.table,
    )
    index = out / "index.html"
    first_digits = next(r for r in result.runs if r.startswith("digits/"))
    last_digits = [r for r in result.runs if r.startswith("digits/")][-1]
    out.mkdir(parents=True, exist_ok=True)
    lines = [
        f"Built {len(result.runs)} runs in {result.seconds:.0f} s.",
        f"  database:   {path}",
        f"  dashboards: {index if index.exists() else out}",
        "Try next:",
        f"  evalstore eval {last_digits} --by class",
        "  evalstore eval hpatches/sift --by noise",
        f"  evalstore compare {first_digits} {last_digits}",
        "  evalstore compare hpatches/sift hpatches/orb hpatches/sift_weak",
        "  evalstore history --metric map_voc07 --experiment digits",
        "  evalstore sql \"select run, metric, value from v_metrics where slice = ''\"",
    ]
    if db is not None:
        lines = [lines[0], *lines[1:4], *(f"{line} --db {path}" for line in lines[4:])]
    err.print("\n".join(lines), markup=False)


def main() -> None:
    app()
