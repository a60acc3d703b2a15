"""The public store: a :class:`~evalstore.database.Database` with the runs and ingest methods.

Every method is a thin, typed call of a library function (:mod:`evalstore.runs`,
:mod:`evalstore.ingest`) with ``self`` as the database; the functions can be called directly
too. Keyword arguments are explicit, so a misspelt one is a ``TypeError``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import polars as pl

from evalstore import ingest as _ingest
from evalstore import runs
from evalstore.database import Database, Progress
from evalstore.ingest import IngestResult, Source
from evalstore.runs import RunRef

__all__ = ["Store"]

Params = Sequence[str] | Mapping[str, Any] | None
Columns = Sequence[str] | Mapping[str, str] | None
Path = str | os.PathLike[str]


class Store(Database):
    """An evalstore database: one DuckDB file with runs, raw outputs and metric values.

    Args:
        path: the database file; default ``$EVALSTORE_DB`` or ``./evalstore.duckdb``.
        read_only: open without write access (several readers may share the file).
        lock_timeout: seconds to wait for another process to release the file.
        memory_limit: DuckDB's memory limit (e.g. ``"8GB"``; default ``$EVALSTORE_MEMORY_LIMIT``
            or DuckDB's 80% of RAM); larger work spills to ``<db>.tmp/``.

    Raises:
        StoreLocked: another process kept the file locked for ``lock_timeout`` seconds.
        SchemaError: the file is not an evalstore database, or of a newer schema.
        EvalstoreError: ``read_only`` and the file does not exist.

    The store is a context manager; DuckDB lets one process write a file at a time, so close
    the store (or leave the ``with`` block) to let other processes in.
    """

    # -- runs ------------------------------------------------------------------------------

    def runs(
        self,
        *,
        experiment: str | None = None,
        tag: str | None = None,
        sort: str = "created_at",
        limit: int | None = None,
    ) -> pl.DataFrame:
        """List runs, newest first by default; see :func:`evalstore.runs.list_runs`."""
        return runs.list_runs(self, experiment=experiment, tag=tag, sort=sort, limit=limit)

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

    # -- ingest ----------------------------------------------------------------------------

    def ingest(
        self,
        data: Source | Sequence[Source],
        *,
        task: str,
        run: str,
        experiment: str | None = None,
        fmt: str | None = None,
        columns: Columns = None,
        negate_score: bool = False,
        labels: str | None = None,
        groups: Source | None = None,
        groups_format: str | None = None,
        voc_gt: Path | None = None,
        replace: bool = False,
        append: bool = False,
        params: Params = None,
        tags: Sequence[str] = (),
        notes: str | None = None,
        created_at: str | datetime | None = None,
        git_commit: str | bool | None = True,
        progress: Progress | None = None,
    ) -> IngestResult:
        """Ingest ranked lists (``verification``, ``matching``, ``retrieval``,
        ``classification``) into a new run, all or nothing; see
        :func:`evalstore.ingest.ingest` for the arguments."""
        return _ingest.ingest(
            self,
            data,
            task=task,
            run=run,
            experiment=experiment,
            fmt=fmt,
            columns=columns,
            negate_score=negate_score,
            labels=labels,
            groups=groups,
            groups_format=groups_format,
            voc_gt=voc_gt,
            replace=replace,
            append=append,
            params=params,
            tags=tags,
            notes=notes,
            created_at=created_at,
            git_commit=git_commit,
            progress=progress,
        )

    def ingest_keypoints(
        self,
        data: Source | Sequence[Source],
        *,
        run: str,
        experiment: str | None = None,
        fmt: str | None = None,
        columns: Columns = None,
        pairs: Source | None = None,
        pairs_format: str | None = None,
        homography_dir: Path | None = None,
        disparity_dir: Path | None = None,
        disparity_scale: float | None = None,
        ransac_threshold: float = 3.0,
        replace: bool = False,
        append: bool = False,
        params: Params = None,
        tags: Sequence[str] = (),
        notes: str | None = None,
        created_at: str | datetime | None = None,
        git_commit: str | bool | None = True,
        progress: Progress | None = None,
    ) -> IngestResult:
        """Ingest keypoint matches with their ground truth (task ``keypoints``); see
        :func:`evalstore.ingest.ingest_keypoints` for the arguments."""
        return _ingest.ingest_keypoints(
            self,
            data,
            run=run,
            experiment=experiment,
            fmt=fmt,
            columns=columns,
            pairs=pairs,
            pairs_format=pairs_format,
            homography_dir=homography_dir,
            disparity_dir=disparity_dir,
            disparity_scale=disparity_scale,
            ransac_threshold=ransac_threshold,
            replace=replace,
            append=append,
            params=params,
            tags=tags,
            notes=notes,
            created_at=created_at,
            git_commit=git_commit,
            progress=progress,
        )

    def ingest_outcomes(
        self,
        data: Source | Sequence[Source],
        *,
        run: str,
        experiment: str | None = None,
        fmt: str | None = None,
        columns: Columns = None,
        replace: bool = False,
        append: bool = False,
        params: Params = None,
        tags: Sequence[str] = (),
        notes: str | None = None,
        created_at: str | datetime | None = None,
        git_commit: str | bool | None = True,
        progress: Progress | None = None,
    ) -> IngestResult:
        """Ingest counted outcomes (TP/FP/FN per group, task ``outcomes``); see
        :func:`evalstore.ingest.ingest_outcomes` for the arguments."""
        return _ingest.ingest_outcomes(
            self,
            data,
            run=run,
            experiment=experiment,
            fmt=fmt,
            columns=columns,
            replace=replace,
            append=append,
            params=params,
            tags=tags,
            notes=notes,
            created_at=created_at,
            git_commit=git_commit,
            progress=progress,
        )
