"""The public store: a :class:`~evalstore.db.connection.Database` with the runs and ingest methods.

Every method is a thin, typed call of a library function (:mod:`evalstore.runs.registry`,
:mod:`evalstore.ingest`) with ``self`` as the database; the functions can be called directly
too. Keyword arguments are explicit, so a misspelt one is a ``TypeError``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

import polars as pl

from evalstore import ingest as _ingest
from evalstore.db import sandbox
from evalstore.db.connection import Database, Progress, WaitNotice
from evalstore.errors import RunNotFound
from evalstore.ingest import IngestResult, Source
from evalstore.ingest.detections import ingest_detections
from evalstore.ingest.formats.boxes import read_boxes
from evalstore.ingest.formats.coco import read_coco
from evalstore.runs import edit, logged, selection
from evalstore.runs import registry as runs
from evalstore.runs.meta import RunMeta, run_meta
from evalstore.runs.registry import RunRef
from evalstore.store import live, staged, steps
from evalstore.store.staged import publish

__all__ = ["Store", "publish", "write_store"]

T = TypeVar("T")

Params = Sequence[str] | Mapping[str, Any] | None
Columns = Sequence[str] | Mapping[str, str] | None
Path = str | os.PathLike[str]


class Store(Database, steps.StoreSteps):
    """An evalstore database: one DuckDB file with runs, raw outputs and metric values.

    Args:
        path: the database file; default ``$EVALSTORE_DB`` or ``./evalstore.duckdb``.
        read_only: open without write access (several readers may share the file).
        lock_timeout: seconds to wait for another process to release the file.
        memory_limit: DuckDB's memory limit (e.g. ``"8GB"``; default ``$EVALSTORE_MEMORY_LIMIT``
            or DuckDB's 80% of RAM); larger work spills to ``<db>.tmp/``.
        on_wait: told once, with a one-line message, when the file's lock must be waited for.
        create: make a new store when the file does not exist (or is an empty DuckDB file).
        migrate: upgrade a store of an older schema in place. A ``read_only`` store is
            neither created nor upgraded: it changes nothing.

    Raises:
        StoreLocked: another process kept the file locked for ``lock_timeout`` seconds.
        SchemaError: the file is not an evalstore database, of a newer schema, empty and not
            ``create``, or of an older schema and not ``migrate`` (naming `evalstore upgrade`).
        EvalstoreError: the file does not exist and ``read_only`` or not ``create``.

    The store is a context manager; DuckDB lets one process write a file at a time, so close
    the store (or leave the ``with`` block) to let other processes in. Its methods
    ``log_lists``, ``log_keypoints``, ``log_outcomes`` and ``log_detections`` store a run's
    evaluations at training steps (:class:`~evalstore.store.steps.StoreSteps`).
    """

    # -- runs ------------------------------------------------------------------------------

    def runs(
        self,
        *,
        experiment: str | None = None,
        tag: str | None = None,
        commit: str | None = None,
        where: str | None = None,
        sort: str = "created_at",
        limit: int | None = None,
        step_runs: bool = False,
    ) -> pl.DataFrame:
        """List runs, newest first by default, with their ``status`` and ``steps``, without
        the step runs unless ``step_runs``; see :func:`evalstore.runs.selection.list_runs`."""
        return selection.list_runs(self, experiment=experiment, tag=tag, commit=commit,
                                   where=where, sort=sort, limit=limit,
                                   step_runs=step_runs)  # fmt: skip

    def run(self, ref: RunRef) -> dict[str, Any]:
        """One run with its metadata and per-task counts."""
        return runs.get_run(self, ref)

    def resolve(self, ref: RunRef) -> int:
        """The run id of a reference: ``NAME``, ``EXPERIMENT/NAME`` or an id."""
        return runs.resolve(self, ref)

    def remove(self, ref: RunRef) -> dict[str, Any]:
        """Delete a run and everything recorded for it; returns what was deleted."""
        return runs.remove_run(self, ref)

    def tag(self, ref: RunRef, tags: Sequence[str], *, remove: bool = False) -> list[str]:
        """Add (or remove) tags of a run; returns the run's tags afterwards."""
        return runs.tag_run(self, ref, tags, remove=remove)

    def sql(
        self,
        query: str,
        params: Mapping[str, Any] | None = None,
        *,
        max_rows: int = sandbox.DEFAULT_MAX_ROWS,
        timeout: float | None = sandbox.DEFAULT_TIMEOUT,
    ) -> pl.DataFrame:
        """Run one read-only query of your own (``$name`` parameters from ``params``) and
        return its rows, at most ``max_rows``.

        A store opened read-only runs it in the sandbox of ``evalstore sql`` (nothing but the
        store is read, settings locked; the store stays a sandbox). A writable store runs it
        as the named queries run, checked to be one read-only statement, inside a
        transaction that is rolled back.

        Raises:
            InvalidInput: not one read-only statement, or it fails: one line.
        """
        if self.read_only:
            sandbox.lock_down(self.con)
            return sandbox.run_query(self.con, query, params, max_rows=max_rows,
                                     timeout=timeout).frame  # fmt: skip
        return sandbox.run_query(self.con, query, params, max_rows=max_rows, timeout=timeout,
                                 trusted=True).frame  # fmt: skip

    def remove_many(
        self, refs: Sequence[RunRef] = (), *, experiment: str | None = None
    ) -> list[dict[str, Any]]:
        """Delete several runs, and every run of ``experiment``, in one transaction."""
        return edit.remove_runs(self, refs, experiment=experiment)

    def rename(self, ref: RunRef, new: str) -> dict[str, Any]:
        """Rename a run: ``NAME``, or ``EXPERIMENT/NAME`` to move it; its id stays."""
        return edit.rename_run(self, ref, new)

    def set(
        self,
        ref: RunRef,
        *,
        notes: str | None = None,
        params: Params = None,
        unset: Sequence[str] = (),
    ) -> dict[str, Any]:
        """Edit a run's notes and parameters after ingest (``unset``: keys to remove)."""
        return edit.set_run(self, ref, notes=notes, params=params, unset=unset)

    def log_metric(
        self, run: RunRef, metric: str, value: float, step: int | None = None
    ) -> dict[str, Any]:
        """Record a number computed outside evalstore (a training loss, an accuracy) for a
        run, at ``step`` or without one; the same (run, metric, step) again replaces it. See
        :func:`evalstore.runs.logged.log_metric`. A run that does not exist is not made:
        the error names ``Store.start_run``, which opens one before its rows."""
        try:
            return logged.log_metric(self, run, metric, value, step)
        except RunNotFound as exc:
            if not str(exc).startswith("no run"):  # ambiguous: the user picks
                raise
            raise RunNotFound(
                f"{exc}; Store.start_run({str(run)!r}) or evalstore.init opens it"
            ) from None

    def start_run(
        self,
        run: str,
        *,
        experiment: str | None = None,
        params: Params = None,
        tags: Sequence[str] = (),
        notes: str | None = None,
        git_commit: str | bool | None = True,
        resume: bool = False,
        flush_every: float = live.FLUSH_EVERY,
        lock_timeout: float = 60.0,
    ) -> live.Run:
        """Open a run for logging from a training loop, made now without rows (running):
        :func:`evalstore.init` on this store (see it for the arguments). The Run writes its
        values through connections of its own, so this store may stay open."""
        meta = RunMeta(run, experiment=experiment, params=params, tags=tags, notes=notes,
                       git_commit=git_commit)  # fmt: skip
        return live.start_run(self, meta, resume=resume, flush_every=flush_every,
                              lock_timeout=lock_timeout)  # fmt: skip

    # -- ingest ----------------------------------------------------------------------------
    # Each method takes the run's metadata as ``meta`` (a RunMeta); run=, experiment=,
    # replace=, append=, params=, tags=, notes=, created_at= and git_commit= are kept for
    # compatibility: they build the RunMeta instead (never together with meta=).

    def ingest(
        self,
        data: Source | Sequence[Source],
        *,
        task: str,
        meta: RunMeta | None = None,
        fmt: str | None = None,
        columns: Columns = None,
        negate_score: bool = False,
        labels: str | None = None,
        groups: Source | None = None,
        groups_format: str | None = None,
        voc_gt: Path | None = None,
        qrels: Path | None = None,
        progress: Progress | None = None,
        run: str | None = None,
        experiment: str | None = None,
        replace: bool = False,
        append: bool = False,
        params: Params = None,
        tags: Sequence[str] = (),
        notes: str | None = None,
        created_at: str | datetime | None = None,
        git_commit: str | bool | None = True,
        keep_tags: bool = True,
    ) -> IngestResult:
        """Ingest ranked lists (``verification``, ``matching``, ``retrieval``,
        ``classification``) into a new run, all or nothing; see
        :func:`evalstore.ingest.ingest` for the arguments. ``replace=True`` keeps the run's
        id and its tags (``tags`` added), or with ``keep_tags=False`` only ``tags``."""
        meta = run_meta(meta, run=run, experiment=experiment, params=params, tags=tags,
                        notes=notes, created_at=created_at, git_commit=git_commit,
                        replace=replace, append=append, keep_tags=keep_tags)  # fmt: skip
        return _ingest.ingest(
            self, data, task=task, meta=meta, fmt=fmt, columns=columns,
            negate_score=negate_score, labels=labels, groups=groups,
            groups_format=groups_format, voc_gt=voc_gt, qrels=qrels, progress=progress,
        )  # fmt: skip

    def ingest_hpatches(
        self,
        descriptors: Path,
        *,
        tasks_dir: Path,
        meta: RunMeta | None = None,
        split: str = "a",
        distance: str = "l2",
        distractors: int | None = 2000,
        tasks: Sequence[str] = ("verification", "matching", "retrieval"),
        block_rows: int | None = None,
        progress: Progress | None = None,
        run: str | None = None,
        experiment: str | None = None,
        replace: bool = False,
        params: Params = None,
        tags: Sequence[str] = (),
        notes: str | None = None,
        created_at: str | datetime | None = None,
        git_commit: str | bool | None = True,
    ) -> list[IngestResult]:
        """Compute the three HPatches tasks from a descriptor folder (``DESC/<sequence>/
        {ref,e1..t5}.csv``) and the benchmark's task files, and ingest them into one run, all
        or nothing; see :func:`evalstore.ingest.ingest_hpatches` for the arguments."""
        meta = run_meta(meta, run=run, experiment=experiment, params=params, tags=tags,
                        notes=notes, created_at=created_at, git_commit=git_commit,
                        replace=replace)  # fmt: skip
        return _ingest.ingest_hpatches(
            self, descriptors, tasks_dir=tasks_dir, meta=meta, split=split, distance=distance,
            distractors=distractors, tasks=tasks, block_rows=block_rows, progress=progress,
        )  # fmt: skip

    def ingest_keypoints(
        self,
        data: Source | Sequence[Source],
        *,
        meta: RunMeta | None = None,
        fmt: str | None = None,
        columns: Columns = None,
        pairs: Source | None = None,
        pairs_format: str | None = None,
        homography_dir: Path | None = None,
        disparity_dir: Path | None = None,
        disparity_scale: float | None = None,
        ransac_threshold: float = 3.0,
        estimate: bool = False,
        progress: Progress | None = None,
        run: str | None = None,
        experiment: str | None = None,
        replace: bool = False,
        append: bool = False,
        params: Params = None,
        tags: Sequence[str] = (),
        notes: str | None = None,
        created_at: str | datetime | None = None,
        git_commit: str | bool | None = True,
    ) -> IngestResult:
        """Ingest keypoint matches with their ground truth (task ``keypoints``); see
        :func:`evalstore.ingest.ingest_keypoints` for the arguments. The homographies
        estimated from the matches are made when a metric first needs them, unless
        ``estimate``."""
        meta = run_meta(meta, run=run, experiment=experiment, params=params, tags=tags,
                        notes=notes, created_at=created_at, git_commit=git_commit,
                        replace=replace, append=append)  # fmt: skip
        return _ingest.ingest_keypoints(
            self, data, meta=meta, fmt=fmt, columns=columns, pairs=pairs,
            pairs_format=pairs_format, homography_dir=homography_dir,
            disparity_dir=disparity_dir, disparity_scale=disparity_scale,
            ransac_threshold=ransac_threshold, estimate=estimate, progress=progress,
        )  # fmt: skip

    def ingest_outcomes(
        self,
        data: Source | Sequence[Source],
        *,
        meta: RunMeta | None = None,
        fmt: str | None = None,
        columns: Columns = None,
        progress: Progress | None = None,
        run: str | None = None,
        experiment: str | None = None,
        replace: bool = False,
        append: bool = False,
        params: Params = None,
        tags: Sequence[str] = (),
        notes: str | None = None,
        created_at: str | datetime | None = None,
        git_commit: str | bool | None = True,
    ) -> IngestResult:
        """Ingest counted outcomes (TP/FP/FN per group, task ``outcomes``); see
        :func:`evalstore.ingest.ingest_outcomes` for the arguments."""
        meta = run_meta(meta, run=run, experiment=experiment, params=params, tags=tags,
                        notes=notes, created_at=created_at, git_commit=git_commit,
                        replace=replace, append=append)  # fmt: skip
        return _ingest.ingest_outcomes(
            self, data, meta=meta, fmt=fmt, columns=columns, progress=progress
        )

    def ingest_detections(
        self,
        detections: Any,
        ground_truth: Any,
        *,
        box_format: str = "xywh",
        meta: RunMeta | None = None,
        run: str | None = None,
        experiment: str | None = None,
        replace: bool = False,
        params: Params = None,
        tags: Sequence[str] = (),
        notes: str | None = None,
        created_at: str | datetime | None = None,
        git_commit: str | bool | None = True,
    ) -> IngestResult:
        """Ingest a detector's boxes and the ground truth (task ``detection``): box tables
        (Parquet, CSV or NDJSON paths, polars or pandas DataFrames, pyarrow tables) or
        torchmetrics-style lists of per-image dicts of arrays, with boxes in ``box_format``
        (``xyxy``, ``xywh`` or ``cxcywh``); see :mod:`evalstore.ingest.formats.boxes`. The
        run as for :meth:`ingest` (``run="det/r50"`` or ``meta``)."""
        meta = run_meta(meta, run=run, experiment=experiment, params=params, tags=tags,
                        notes=notes, created_at=created_at, git_commit=git_commit,
                        replace=replace)  # fmt: skip
        data = read_boxes(detections, ground_truth, box_format)
        return ingest_detections(self, data, meta=meta)

    def ingest_coco(
        self,
        results: str | os.PathLike[str],
        annotations: str | os.PathLike[str],
        *,
        meta: RunMeta | None = None,
        run: str | None = None,
        experiment: str | None = None,
        replace: bool = False,
        params: Params = None,
        tags: Sequence[str] = (),
        notes: str | None = None,
        created_at: str | datetime | None = None,
        git_commit: str | bool | None = True,
    ) -> IngestResult:
        """Ingest a COCO results file against its annotation file (task ``detection``); the
        run as for :meth:`ingest`."""
        meta = run_meta(meta, run=run, experiment=experiment, params=params, tags=tags,
                        notes=notes, created_at=created_at, git_commit=git_commit,
                        replace=replace)  # fmt: skip
        data = read_coco(results, annotations)
        return ingest_detections(self, data, meta=meta, files=[str(results), str(annotations)])


def write_store(
    path: Path,
    action: Callable[[Store], T],
    *,
    lock_timeout: float = 10.0,
    on_wait: WaitNotice | None = None,
) -> T:
    """Run ``action`` on the writable :class:`Store` at ``path`` and return what it returns
    (``on_wait``: told once if the store's lock must be waited for).

    A store that does not exist yet is built in a private file beside ``path`` and appears
    at ``path`` only when ``action`` succeeds, by a hard link, which never replaces a file
    (:func:`evalstore.store.staged.write_store` says how).
    """
    return staged.write_store(
        path, action, lock_timeout=lock_timeout, on_wait=on_wait, opener=Store
    )
