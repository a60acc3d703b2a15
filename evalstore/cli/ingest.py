"""evalstore ingest: ranked lists, keypoint matches and outcomes into a run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from evalstore.cli.common import (
    DbOpt,
    Fmt,
    LockOpt,
    command,
    emit,
    err,
    out,
    progress_bar,
)
from evalstore.errors import InvalidInput

if TYPE_CHECKING:
    from evalstore.ingest import IngestResult
    from evalstore.store.facade import Store


#: what the ingest of this process has done, for a Ctrl-C's message
_state: dict[str, Any] = {}


def _interrupted() -> str:
    ref, saved, merging = _state.get("ref"), _state.get("saved"), _state.get("merging")
    if saved is None and merging is not None:
        saved = _committed(_state["db"], merging)  # stopped between the commit and its news
    if saved is not None:
        return f"interrupted after run {ref} (id {saved}) was saved: it is complete in the store"
    what = f" before run {ref} was saved" if ref else ""
    return f"interrupted{what}; the store is as it was"


def _committed(db: Path, run_id: int) -> int | None:
    """``run_id`` if the store holds it (run ids are never given twice), else None."""
    from evalstore.db import queries
    from evalstore.db.connection import Database
    from evalstore.errors import EvalstoreError

    try:
        with Database(db, read_only=True, lock_timeout=10) as store:
            found = queries.fetch_rows(store.con, "store/get_run", {"run_id": run_id})
    except EvalstoreError:
        return None
    return run_id if found else None


@command("ingest", interrupt=_interrupted)
def ingest_cmd(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="Parquet, CSV/TSV, NDJSON or .npz files; with --format hpatches, the "
            "descriptor folder DESC.",
            show_default=False,
        ),
    ],
    run: Annotated[str, typer.Option("--run", "-r", help="Run name: NAME or EXPERIMENT/NAME.")],
    task: Annotated[
        str | None,
        typer.Option(
            "--task",
            "-t",
            help="verification | matching | retrieval | classification | keypoints | outcomes "
            "[required, but with --format hpatches: all three HPatches tasks unless given].",
            show_default=False,
        ),
    ] = None,
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
        str | None,
        typer.Option(
            "--labels",
            help="Label convention: pm1 (+1/-1/0) | 01 | bool [default: pm1, refusing 0 "
            "labels without any -1; pass --labels pm1 to accept them].",
        ),
    ] = None,
    groups: Annotated[
        Path | None,
        typer.Option("--groups", help="Per-list metadata: group_id, n_positives, slice columns."),
    ] = None,
    voc_gt: Annotated[
        Path | None,
        typer.Option("--voc-gt", help="With --format voc: folder of <class>_<set>.txt truth."),
    ] = None,
    qrels: Annotated[
        Path | None,
        typer.Option("--qrels", help="With --format trec: the judgements (qid iter docno grade)."),
    ] = None,
    hpatches_tasks: Annotated[
        Path | None,
        typer.Option(
            "--hpatches-tasks",
            help="With --format hpatches: the benchmark's tasks/ folder (splits, pairs, queries).",
        ),
    ] = None,
    distance: Annotated[
        str | None,
        typer.Option(
            "--distance",
            help="With --format hpatches: l2 | l2sq | l1 | cosine | hamming [default: l2].",
            show_default=False,
        ),
    ] = None,
    hpatches_split: Annotated[
        str | None,
        typer.Option(
            "--hpatches-split",
            help="With --format hpatches: a | b | c | full | illum | view [default: a].",
            show_default=False,
        ),
    ] = None,
    hpatches_distractors: Annotated[
        str | None,
        typer.Option(
            "--hpatches-distractors",
            help="With --format hpatches: distractors per retrieval query, N or all "
            "[default: 2000, the MATLAB benchmark's].",
            show_default=False,
        ),
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
    estimate: Annotated[
        bool,
        typer.Option(
            "--estimate",
            help="keypoints: estimate the homographies now [default: when a metric needs them].",
        ),
    ] = False,
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
    # writers queue: the store is held only for the merge, a second or so per 10 M rows
    lock_timeout: LockOpt = 120.0,
    output: Annotated[
        Fmt, typer.Option("--output-format", help="How to print the summary.")
    ] = Fmt.table,
) -> None:
    """Ingest ranked lists, keypoint matches or counted outcomes into a new run."""
    import polars as pl

    from evalstore.cli.hpatches import hpatches_action
    from evalstore.db.connection import default_path
    from evalstore.runs.registry import split_ref
    from evalstore.store.staging import ingest_staged

    hpatches = fmt == "hpatches"
    if task is None and not hpatches:
        raise typer.BadParameter(
            "missing; it is required unless --format hpatches is given",
            param_hint="'--task' / '-t'",
        )
    only: dict[str, dict[str, object]] = {
        "ranked": {
            "--negate-score": negate_score,
            "--labels": labels is not None,
            "--groups": groups,
            "--voc-gt": voc_gt,
            "--qrels": qrels,
        },
        "keypoints": {
            "--pairs": pairs,
            "--homography-dir": homography_dir,
            "--disparity-dir": disparity_dir,
            "--disparity-scale": disparity_scale,
            "--estimate": estimate,
        },
        "hpatches": {
            "--hpatches-tasks": hpatches_tasks,
            "--distance": distance,
            "--hpatches-split": hpatches_split,
            "--hpatches-distractors": hpatches_distractors,
        },
    }
    kind = "hpatches" if hpatches else task if task in ("keypoints", "outcomes") else "ranked"
    for owner, options in only.items():
        given = [name for name, value in options.items() if value]
        if given and owner != kind:
            if owner == "hpatches":
                raise InvalidInput(f"{given[0]} applies only with --format hpatches")
            raise InvalidInput(
                f"{given[0]} does not apply to "
                f"{'--format hpatches' if hpatches else f'--task {task}'}"
            )
    meta: dict[str, Any] = {
        "run": run,
        "experiment": experiment,
        "fmt": fmt,
        "columns": column,
        "replace": replace,
        "append": append,
        "params": param,
        "tags": tag or (),
        "notes": notes,
        "created_at": created_at,
        "git_commit": git_commit if git_commit is not None else True,
    }

    results: list[IngestResult] = []

    def run_ingest(store: Store) -> IngestResult:
        with progress_bar(output is not Fmt.json, "ingest") as cb:
            if hpatches:
                return hpatches_action(
                    store,
                    files,
                    task,
                    hpatches_tasks,
                    distance,
                    hpatches_split,
                    hpatches_distractors,
                    meta,
                    cb,
                    results,
                )
            if kind == "keypoints":
                return store.ingest_keypoints(
                    files,
                    pairs=pairs,
                    homography_dir=homography_dir,
                    disparity_dir=disparity_dir,
                    disparity_scale=disparity_scale,
                    estimate=estimate,
                    progress=cb,
                    **meta,
                )
            if kind == "outcomes":
                return store.ingest_outcomes(files, progress=cb, **meta)
            return store.ingest(
                files,
                task=str(task),
                negate_score=negate_score,
                labels=labels,
                groups=groups,
                voc_gt=voc_gt,
                qrels=qrels,
                progress=cb,
                **meta,
            )

    ref = split_ref(run, experiment)
    _state.update(ref=f"{ref[0]}/{ref[1]}", db=db or default_path())
    # read, check and sort in a private staging store; hold the store only for the merge
    result = ingest_staged(
        db or default_path(),
        run_ingest,
        ref=ref,
        replace=replace,
        append=append,
        lock_timeout=lock_timeout,
        on_commit=lambda run_id: _state.update(saved=run_id),
        on_merge=lambda run_id: _state.update(merging=run_id),
    )
    for each in results:  # the other tasks of an hpatches run: the same run
        each.run_id, each.replaced = result.run_id, result.replaced
    results = results or [result]
    for warning in [w for each in results for w in each.warnings]:
        err.print(f"Warning: {warning}", markup=False)
    if output is not Fmt.table:
        emit(pl.DataFrame([vars(each) for each in results]), output)
    for result in results if output is Fmt.table else ():
        verb = "replaced" if result.replaced else "ingested"
        labelled = (
            ""
            if result.positives is None
            else f", {result.positives:,} positive, {result.negatives or 0:,} negative, "
            f"{result.ignored or 0:,} ignored"
        )
        out.print(
            f"{verb} run {result.ref} (id {result.run_id}): {result.rows:,} {result.task} rows "
            f"in {result.lists:,} list(s), {result.not_retrieved:,} not retrieved{labelled}",
            markup=False,
        )
