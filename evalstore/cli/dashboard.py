"""evalstore dashboard and demo: pages to look at."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalstore.cli.common import (
    DbOpt,
    Fmt,
    LockOpt,
    command,
    emit,
    err,
    progress_bar,
)
from evalstore.errors import EvalstoreError


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
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            help="Compare every selected run against this run [default: the first of --runs, "
            "else each experiment's run tagged baseline].",
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
    allow_read: Annotated[
        list[Path] | None,
        typer.Option(
            "--allow-read",
            help="Let the specs' own sql read this file or folder; repeatable.",
        ),
    ] = None,
    changed: Annotated[
        tuple[str, str] | None,
        typer.Option(
            "--changed",
            metavar="RUN_A RUN_B",
            help="Instead, write changed.html: what changed from RUN_A to RUN_B (the lists "
            "that moved most, the items of one list whose rank moved; `evalstore diff`).",
            show_default=False,
        ),
    ] = None,
    items: Annotated[
        str | None,
        typer.Option(
            "--items",
            help="With --changed: the list (its group_id) whose items to show [default: the "
            "list that moved most].",
        ),
    ] = None,
    metric: Annotated[
        str | None,
        typer.Option(
            "--metric", "-m", help="With --changed: a per-list metric [default: the task's first]."
        ),
    ] = None,
    task: Annotated[
        str | None,
        typer.Option("--task", help="With --changed: the task [default: the one the runs share]."),
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", "-n", help="With --changed: at most this many lists, items.")
    ] = 20,
    db: DbOpt = None,
    lock_timeout: LockOpt = 60.0,
) -> None:
    """Render dashboards to static HTML pages that work offline (see docs/dashboards.md).

    The pages' queries run in the sandbox of `evalstore sql`: a spec's own sql reads the
    store only (and what --allow-read names), one read-only statement per panel."""
    from evalstore import dashboards
    from evalstore.db import sandbox
    from evalstore.db.connection import default_path
    from evalstore.store.facade import Store

    path = db or default_path()
    if not path.exists():
        raise EvalstoreError(f"no evalstore database at {path} (ingest a run first, or pass --db)")
    if changed is not None and baseline is not None:
        raise EvalstoreError("--baseline does not go with --changed RUN_A RUN_B")
    if changed is None and (items, metric, task) != (None, None, None):
        raise EvalstoreError("--items, --metric and --task go with --changed RUN_A RUN_B")
    if changed is not None:
        # missing values are computed (and cached) unless --no-eval, which reads only
        with Store(
            path, read_only=not evaluate, lock_timeout=lock_timeout, create=False, migrate=False
        ) as store:
            page = dashboards.write_changed(
                store, out, *changed, task=task, metric=metric, items=items, limit=limit
            )
        typer.echo(f"wrote {page}")
        return
    chosen = {"experiments": experiment or (), "runs": runs or ()}
    with progress_bar(True, "dashboards") as cb:
        if evaluate:
            with Store(path, lock_timeout=lock_timeout, create=False, migrate=False) as store:
                dashboards.evaluate_selected(store, **chosen, progress=cb)
                if baseline is not None and (experiment or runs):  # may be outside them
                    dashboards.evaluate_selected(store, runs=[baseline], progress=cb)
        # the pages from a read-only store in the sandbox: a spec's SQL reads the store only
        with Store(path, read_only=True, lock_timeout=lock_timeout) as store:
            sandbox.lock_down(store.con, allow_read or ())
            pages = dashboards.write_dashboards(
                store, out, specs=spec, **chosen, progress=cb, baseline=baseline
            )
    typer.echo(f"wrote {len(pages) - 1} dashboard(s): {pages[0]}")


@command("demo")
def demo_cmd(
    db: Annotated[
        Path,
        typer.Option(
            "--db",
            help="The demo's own database (never $EVALSTORE_DB: the demo's runs stay apart "
            "from yours).",
        ),
    ] = Path("evalstore-demo.duckdb"),
    out: Annotated[Path, typer.Option("--out", help="Folder for the dashboards.")] = Path(
        "dashboards-out"
    ),
    quick: Annotated[
        bool, typer.Option("--quick", help="A smaller demo (every task, fewer runs).")
    ] = False,
    lock_timeout: LockOpt = 60.0,
) -> None:
    """Build a database of real evaluation runs (digits classifiers, HPatches-style
    descriptors on real photographs), compute their metrics and write dashboards."""
    from evalstore import demo
    from evalstore.store.facade import Store

    path = db
    with Store(path, lock_timeout=lock_timeout) as store, progress_bar(True, "demo") as cb:
        result = demo.build(store, out=out, quick=quick, progress=cb)
        frame = store.runs()
    emit(
        frame.select("run_id", "experiment", "name", "created_at", "tasks", "n_rows", "tags"),
        Fmt.table,
    )
    index = out / "index.html"
    last_digits = [r for r in result.runs if r.startswith("digits/")][-1]
    out.mkdir(parents=True, exist_ok=True)
    lines = [
        f"Built {len(result.runs)} runs in {result.seconds:.0f} s.",
        f"  database:   {path}",
        f"  dashboards: {index if index.exists() else out}",
        "Try next:",
        f"  evalstore eval {last_digits} --by class",
        f"  evalstore eval {last_digits} --protocol voc07-numpy   (see evalstore protocols)",
        "  evalstore eval hpatches/sift --by noise",
        "  evalstore groups -e digits -m map_voc07        (each configuration's seeds)",
        "  evalstore compare -g hidden=32 -g hidden=128 -e digits",
        "  evalstore compare hpatches/sift hpatches/orb hpatches/sift_weak",
        "  evalstore eval detection/hough detection/log --protocol coco --by category",
        "  evalstore eval detection/hough --protocol tide   (TIDE's error breakdown)",
        "  evalstore leaderboard",
        "  evalstore history --metric map_voc07 --experiment digits",
        "  evalstore sql \"select run, metric, value from v_metrics where slice = ''\"",
        "  evalstore ui   (explore the runs in a browser)",
    ]
    lines = [*lines[:4], *(_with_db(line, path) for line in lines[4:])]
    err.print("\n".join(lines), markup=False)


def _with_db(hint: str, path: Path) -> str:
    """A hint's command with ``--db PATH``, before its comment in parentheses."""
    command, _, comment = hint.partition("   (")
    return f"{command.rstrip()} --db {path}" + (f"   ({comment}" if comment else "")
