"""evalstore ingest: ranked lists, keypoint matches, outcomes and detections into a run."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from evalstore.cli.common import (
    DbOpt,
    Fmt,
    LockOpt,
    command,
    debug_log,
    emit,
    err,
    out,
    progress_bar,
)

if TYPE_CHECKING:
    from evalstore.db.connection import Progress
    from evalstore.ingest import IngestResult
    from evalstore.runs.meta import RunMeta


#: what the ingest of this process has done, for a Ctrl-C's message
_state: dict[str, Any] = {}


def _interrupted() -> str:
    ref, saved, merging = _state.get("ref"), _state.get("saved"), _state.get("merging")
    if saved is None and merging is not None and _state.get("replace"):
        # a replaced run keeps its id: the id cannot tell which of the two the store holds
        return f"interrupted while run {ref} was replaced: the store holds it whole, new or old"
    if saved is None and merging is not None:
        saved = _committed(_state["db"], merging)  # stopped between the commit and its news
    if saved is not None:
        return f"interrupted after run {ref} (id {saved}) was saved: it is complete in the store"
    what = f" before run {ref} was saved" if ref else ""
    return f"interrupted{what}; the store is as it was"


def _committed(db: Path, run_id: int) -> int | None:
    """``run_id`` if the store holds it (a new run's id is never given twice), else None."""
    from evalstore.db import queries
    from evalstore.db.connection import Database
    from evalstore.errors import EvalstoreError

    try:
        with Database(db, read_only=True, lock_timeout=10) as store:
            found = queries.fetch_rows(store.con, "store/get_run", {"run_id": run_id})
    except EvalstoreError:
        return None
    return run_id if found else None


def _opt(*names: str, help: str, shown: bool = True) -> Any:
    """A Typer option of these names (``shown``: with its default in the help)."""
    return typer.Option(*names, help=help, show_default=shown)


Files = Annotated[
    list[Path],
    typer.Argument(
        help="Parquet, CSV/TSV, NDJSON or .npz files; with --format hpatches, the descriptor "
        "folder DESC; with --format coco, the results JSON; with --format voc-det, the "
        "devkit's comp4_det_<set>_<class>.txt files.",
        show_default=False,
    ),
]
RunOpt = Annotated[str, _opt("--run", "-r", help="Run name: NAME or EXPERIMENT/NAME.")]
TaskOpt = Annotated[
    str | None,
    _opt("--task", "-t", shown=False, help="verification | matching | retrieval | "
         "classification | keypoints | outcomes | detection [required, but with --format "
         "hpatches: all three HPatches tasks unless given; with --format coco | voc-det: "
         "detection]."),
]  # fmt: skip
ExperimentOpt = Annotated[
    str | None, _opt("--experiment", "-e", help="Experiment of a bare run name [default: default].")
]
FmtOpt = Annotated[str | None, _opt("--format", help="File format, overriding the extension.")]
ColumnOpt = Annotated[
    list[str] | None,
    _opt("--column", "-c", help="OURS=THEIRS column mapping, e.g. score=distance."),
]
NegateOpt = Annotated[bool, _opt("--negate-score", help="Store -score (for distances).")]
LabelsOpt = Annotated[
    str | None,
    _opt("--labels", help="Label convention: pm1 (+1/-1/0) | 01 | bool [default: pm1, refusing "
         "0 labels without any -1; pass --labels pm1 to accept them]."),
]  # fmt: skip
GroupsOpt = Annotated[
    Path | None, _opt("--groups", help="Per-list metadata: group_id, n_positives, slice columns.")
]
VocOpt = Annotated[
    Path | None, _opt("--voc-gt", help="With --format voc: folder of <class>_<set>.txt truth.")
]
QrelsOpt = Annotated[
    Path | None, _opt("--qrels", help="With --format trec: the judgements (qid iter docno grade).")
]
HTasksOpt = Annotated[
    Path | None,
    _opt("--hpatches-tasks",
         help="With --format hpatches: the benchmark's tasks/ folder (splits, pairs, queries)."),
]  # fmt: skip
DistanceOpt = Annotated[
    str | None,
    _opt("--distance", shown=False,
         help="With --format hpatches: l2 | l2sq | l1 | cosine | hamming [default: l2]."),
]  # fmt: skip
SplitOpt = Annotated[
    str | None,
    _opt("--hpatches-split", shown=False,
         help="With --format hpatches: a | b | c | full | illum | view [default: a]."),
]  # fmt: skip
DistractorsOpt = Annotated[
    str | None,
    _opt("--hpatches-distractors", shown=False, help="With --format hpatches: distractors per "
         "retrieval query, N or all [default: 2000, the MATLAB benchmark's]."),
]  # fmt: skip
PairsOpt = Annotated[
    Path | None,
    _opt("--pairs", help="keypoints: pair_id, h11..h33, width, height, cameras (k0_11..k0_33, "
         "k1_11..k1_33, t_11..t_34, n_keypoints0), slices; or SuperGlue's pairs .txt file."),
]  # fmt: skip
HDirOpt = Annotated[
    Path | None, _opt("--homography-dir", help="keypoints: a 3x3 homography file per pair.")
]
DDirOpt = Annotated[
    Path | None, _opt("--disparity-dir", help="keypoints: a disparity map per pair (.npy, .png).")
]
DScaleOpt = Annotated[
    float | None, _opt("--disparity-scale", help="Map value -> px [default: 1 .npy, 1/256 .png].")
]
EstimateOpt = Annotated[
    bool,
    _opt("--estimate",
         help="keypoints: estimate the homographies now [default: when a metric needs them]."),
]  # fmt: skip
CocoGtOpt = Annotated[
    Path | None,
    _opt("--coco-gt", help="With --format coco: the annotation file (instances_val2017.json)."),
]
VocAnnOpt = Annotated[
    Path | None,
    _opt("--voc-annotations", help="With --format voc-det: the folder of <image_id>.xml files."),
]
VocSetOpt = Annotated[
    Path | None,
    _opt("--voc-imageset", help="With --format voc-det: the image set file (ImageSets/Main/"
         "<set>.txt)."),
]  # fmt: skip
BoxesGtOpt = Annotated[
    Path | None,
    _opt("--boxes-gt", help="With -t detection: the ground-truth boxes (Parquet, CSV or NDJSON)."),
]
BoxFormatOpt = Annotated[
    str | None,
    _opt("--box-format", shown=False,
         help="With -t detection: the box columns, xyxy | xywh | cxcywh [default: xywh]."),
]  # fmt: skip
ReplaceOpt = Annotated[bool, _opt("--replace", help="Replace a run of the same name atomically.")]
ReplaceTagsOpt = Annotated[
    bool,
    _opt("--replace-tags", help="With --replace: the run's tags become the --tag values alone "
         "(without it the replaced run keeps its tags, --tag ones added)."),
]  # fmt: skip
AppendOpt = Annotated[bool, _opt("--append", help="Add this task to an existing run.")]
ParamOpt = Annotated[
    list[str] | None,
    _opt("--param", "-p", help="Run parameter key=value (JSON values stay typed)."),
]
TagOpt = Annotated[list[str] | None, _opt("--tag", help="Tag the run (repeatable).")]
NotesOpt = Annotated[str | None, _opt("--notes", help="Free text notes.")]
CreatedOpt = Annotated[str | None, _opt("--created-at", help="Backfill the run's time (ISO 8601).")]
CommitOpt = Annotated[
    str | None,
    _opt("--git-commit", help="Commit to record [default: the current directory's]."),
]
VerboseOpt = Annotated[
    bool,
    _opt("--verbose", "-v", help="Say on stderr what the ingest decides (the evalstore "
         "logger's debug lines: why a file is streamed rather than read by DuckDB)."),
]  # fmt: skip
OutputOpt = Annotated[Fmt, _opt("--output-format", help="How to print the summary.")]


@command("ingest", interrupt=_interrupted)
def ingest_cmd(
    files: Files,
    run: RunOpt,
    task: TaskOpt = None,
    experiment: ExperimentOpt = None,
    fmt: FmtOpt = None,
    column: ColumnOpt = None,
    negate_score: NegateOpt = False,
    labels: LabelsOpt = None,
    groups: GroupsOpt = None,
    voc_gt: VocOpt = None,
    qrels: QrelsOpt = None,
    hpatches_tasks: HTasksOpt = None,
    distance: DistanceOpt = None,
    hpatches_split: SplitOpt = None,
    hpatches_distractors: DistractorsOpt = None,
    pairs: PairsOpt = None,
    homography_dir: HDirOpt = None,
    disparity_dir: DDirOpt = None,
    disparity_scale: DScaleOpt = None,
    estimate: EstimateOpt = False,
    coco_gt: CocoGtOpt = None,
    voc_annotations: VocAnnOpt = None,
    voc_imageset: VocSetOpt = None,
    boxes_gt: BoxesGtOpt = None,
    box_format: BoxFormatOpt = None,
    replace: ReplaceOpt = False,
    replace_tags: ReplaceTagsOpt = False,
    append: AppendOpt = False,
    param: ParamOpt = None,
    tag: TagOpt = None,
    notes: NotesOpt = None,
    created_at: CreatedOpt = None,
    git_commit: CommitOpt = None,
    verbose: VerboseOpt = False,
    db: DbOpt = None,
    # writers queue: the store is held only for the merge, a second or so per 10 M rows
    lock_timeout: LockOpt = 120.0,
    output: OutputOpt = Fmt.table,
) -> None:
    """Ingest ranked lists, keypoint matches, counted outcomes or detections into a new
    run."""
    from evalstore.db.connection import default_path

    detection = (coco_gt, voc_annotations, voc_imageset, boxes_gt, box_format)
    if task is None and fmt not in ("hpatches", "coco", "voc-det") and detection == (None,) * 5:
        raise typer.BadParameter(
            "missing; it is required unless --format hpatches is given (or --format coco | "
            "voc-det, whose task is detection)",
            param_hint="'--task' / '-t'",
        )
    others = (groups, voc_gt, qrels, hpatches_tasks, distance, hpatches_split,
              hpatches_distractors, pairs, homography_dir, disparity_dir, disparity_scale,
              *detection)  # fmt: skip
    # ranked lists, perhaps Parquet files that DuckDB reads itself: tried without polars
    light = (task is not None and fmt in (None, "parquet") and not (estimate or append)
             and others == (None,) * len(others))  # fmt: skip
    meta = None
    if light and task is not None:  # (the full path makes the options first, which hold here)
        meta = _meta(run, experiment, param, tag, notes, created_at, git_commit, replace, append,
                     replace_tags)  # fmt: skip
        path = db or default_path()
        _state.update(ref=meta.ref, db=path, replace=replace)
        with debug_log(verbose), progress_bar(output is not Fmt.json, "ingest") as cb:
            found = _direct(path, files, meta, task, fmt, column, negate_score, labels,
                            lock_timeout, cb)  # fmt: skip
        if found is not None:
            _report([found], output)
            return
    from evalstore.ingest.options import IngestOptions
    from evalstore.store.staging import ingest_files

    options = IngestOptions(
        task=task, fmt=fmt, columns=column, negate_score=negate_score, labels=labels,
        groups=groups, voc_gt=voc_gt, qrels=qrels, pairs=pairs, homography_dir=homography_dir,
        disparity_dir=disparity_dir, disparity_scale=disparity_scale, estimate=estimate,
        hpatches_tasks=hpatches_tasks, distance=distance, hpatches_split=hpatches_split,
        hpatches_distractors=hpatches_distractors, coco_gt=coco_gt,
        voc_annotations=voc_annotations, voc_imageset=voc_imageset, boxes_gt=boxes_gt,
        box_format=box_format,
    )  # fmt: skip
    if meta is None:
        meta = _meta(run, experiment, param, tag, notes, created_at, git_commit, replace, append,
                     replace_tags)  # fmt: skip
    path = db or default_path()
    _state.update(ref=meta.ref, db=path, replace=replace)
    with debug_log(verbose), progress_bar(output is not Fmt.json, "ingest") as cb:
        results = ingest_files(path, files, meta, options, lock_timeout=lock_timeout,
                               on_commit=lambda run_id: _state.update(saved=run_id),
                               on_merge=lambda run_id: _state.update(merging=run_id),
                               progress=cb)  # fmt: skip
    _report(results, output)


def _meta(
    run: str,
    experiment: str | None,
    params: list[str] | None,
    tags: list[str] | None,
    notes: str | None,
    created_at: str | None,
    git_commit: str | None,
    replace: bool,
    append: bool,
    replace_tags: bool,
) -> RunMeta:
    """The run of ``evalstore ingest``'s options."""
    from evalstore.runs.meta import RunMeta

    return RunMeta(run, experiment=experiment, params=params, tags=tags or (), notes=notes,
                   created_at=created_at, git_commit=True if git_commit is None else git_commit,
                   replace=replace, append=append, keep_tags=not replace_tags)  # fmt: skip


def _direct(
    path: Path,
    files: list[Path],
    meta: RunMeta,
    task: str,
    fmt: str | None,
    columns: list[str] | None,
    negate_score: bool,
    labels: str | None,
    lock_timeout: float,
    progress: Progress | None,
) -> IngestResult | None:
    """The ingest of Parquet files that DuckDB reads itself, without polars (as
    ``cached_eval`` serves ``eval``): None, nothing done, where the call needs the full path
    (:func:`evalstore.ingest.parquet_direct.prepare`). Files the direct path then refuses are
    streamed on the same staging store, as the full path streams them."""
    from evalstore.db.connection import Database
    from evalstore.ingest.parquet_direct import Recheck, ingest_prepared, prepare
    from evalstore.store.staged import ingest_staged

    prepared = prepare(files, task=task, meta=meta, fmt=fmt, columns=columns,
                       negate_score=negate_score, labels=labels)  # fmt: skip
    if prepared is None:
        return None

    def action(store: Database) -> IngestResult:
        try:
            return ingest_prepared(store, prepared, progress)
        except Recheck:
            from evalstore.ingest.ranked import ingest_streamed

            return ingest_streamed(store, files, task=task, meta=meta, columns=columns,
                                   negate_score=negate_score, labels=labels,
                                   progress=progress)  # fmt: skip

    return ingest_staged(path, action, opener=Database, meta=meta, lock_timeout=lock_timeout,
                         on_commit=lambda run_id: _state.update(saved=run_id),
                         on_merge=lambda run_id: _state.update(merging=run_id))  # fmt: skip


def _report(results: list[IngestResult], output: Fmt) -> None:
    """Each warning on stderr, then a line per task (or the results as a frame)."""
    for warning in [w for each in results for w in each.warnings]:
        err.print(f"Warning: {warning}", markup=False)
    if output is not Fmt.table:
        import polars as pl

        emit(pl.DataFrame([vars(each) for each in results]), output)
        return
    # a detection's result, if any: its module is loaded when a detection was ingested
    detections = sys.modules.get("evalstore.ingest.detections")
    for result in results:
        verb = "replaced" if result.replaced else "ingested"
        if detections is not None and isinstance(result, detections.DetectionResult):
            out.print(
                f"{verb} run {result.ref} (id {result.run_id}): "
                f"{_n(result.rows, 'detection', 'detections')} of "
                f"{_n(result.ground_truth_boxes, 'ground-truth box', 'ground-truth boxes')} in "
                f"{_n(result.lists, 'image', 'images')}, "
                f"{_n(result.categories, 'category', 'categories')}",
                markup=False,
            )
            continue
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


def _n(count: int, one: str, many: str) -> str:
    """``count`` and its noun: ``1 category``, ``1,234 detections``."""
    return f"{count:,} {one if count == 1 else many}"
