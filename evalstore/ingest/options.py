"""The options of an ingest besides the run's metadata, and which of them apply to which
task: what ``evalstore ingest`` parses, checked and carried to the right entry point.

:class:`IngestOptions` is checked when made: an option of another task (``--pairs`` with
``--task retrieval``, ``--distance`` without ``--format hpatches``) is refused there, and
:func:`dispatch` calls the one entry point the options name
(:func:`~evalstore.ingest.ingest`, :func:`~evalstore.ingest.ingest_keypoints`,
:func:`~evalstore.ingest.ingest_outcomes` or :func:`~evalstore.ingest.ingest_hpatches`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalstore.errors import InvalidInput
from evalstore.ingest.hpatches import HPATCHES_TASKS, MATLAB_DISTRACTORS, ingest_hpatches
from evalstore.ingest.keypoints import ingest_keypoints
from evalstore.ingest.outcomes import ingest_outcomes
from evalstore.ingest.ranked import ingest
from evalstore.ingest.sources import Source
from evalstore.ingest.write import IngestResult
from evalstore.runs.meta import RunMeta

if TYPE_CHECKING:
    from evalstore.db.connection import Database, Progress

__all__ = ["KINDS", "IngestOptions", "check_hpatches", "dispatch"]

PathLike = str | os.PathLike[str]

LOG = logging.getLogger(__name__)

#: the kinds of ingest, each with the options that apply to it alone (the others apply to all)
KINDS = ("ranked", "keypoints", "outcomes", "hpatches")


@dataclass(frozen=True, kw_only=True)
class IngestOptions:
    """What an ingest reads and how, for every kind of task (the ``evalstore ingest``
    options but the run's metadata, which is a :class:`~evalstore.runs.meta.RunMeta`).

    ``task`` is required but with ``fmt="hpatches"`` (where it picks one of the three
    HPatches tasks). ``hpatches_distractors`` is a count from 1 or ``"all"`` (default the
    MATLAB benchmark's 2000).

    Raises:
        InvalidInput: an option given for another kind of task, naming it; with
            ``fmt="hpatches"``, no ``hpatches_tasks``, a ``columns`` mapping, a task that is
            not an HPatches task or a distractor count that is neither a count nor ``all``.
    """

    task: str | None = None
    fmt: str | None = None
    columns: Sequence[str] | Mapping[str, str] | None = None
    # ranked lists
    negate_score: bool = False
    labels: str | None = None
    groups: Source | None = None
    voc_gt: PathLike | None = None
    qrels: PathLike | None = None
    # keypoint matches
    pairs: Source | None = None
    homography_dir: PathLike | None = None
    disparity_dir: PathLike | None = None
    disparity_scale: float | None = None
    estimate: bool = False
    # an HPatches descriptor folder
    hpatches_tasks: PathLike | None = None
    distance: str | None = None
    hpatches_split: str | None = None
    hpatches_distractors: str | int | None = None

    def __post_init__(self) -> None:
        if self.task is None and self.fmt != "hpatches":
            raise InvalidInput("--task is required unless --format hpatches is given")
        owners: dict[str, dict[str, object]] = {
            "ranked": {"--negate-score": self.negate_score, "--labels": self.labels is not None,
                       "--groups": self.groups, "--voc-gt": self.voc_gt, "--qrels": self.qrels},
            "keypoints": {"--pairs": self.pairs, "--homography-dir": self.homography_dir,
                          "--disparity-dir": self.disparity_dir,
                          "--disparity-scale": self.disparity_scale, "--estimate": self.estimate},
            "hpatches": {"--hpatches-tasks": self.hpatches_tasks, "--distance": self.distance,
                         "--hpatches-split": self.hpatches_split,
                         "--hpatches-distractors": self.hpatches_distractors},
        }  # fmt: skip
        for owner, options in owners.items():
            given = [name for name, value in options.items() if value]
            if given and owner != self.kind:
                if owner == "hpatches":
                    raise InvalidInput(f"{given[0]} applies only with --format hpatches")
                raise InvalidInput(f"{given[0]} does not apply to {self.where}")
        if self.kind == "hpatches":
            if self.hpatches_tasks is None:
                raise InvalidInput(
                    "--format hpatches needs --hpatches-tasks DIR (the benchmark's tasks/)"
                )
            if self.columns:
                raise InvalidInput("--column does not apply to --format hpatches")
            if self.task is not None and self.task not in HPATCHES_TASKS:
                raise InvalidInput(
                    f"--format hpatches computes {', '.join(HPATCHES_TASKS)}; --task "
                    f"{self.task} is none of them"
                )
            self.distractors()  # refused now, not after the folder is read

    @property
    def kind(self) -> str:
        """``hpatches`` (an HPatches descriptor folder), ``keypoints``, ``outcomes`` or
        ``ranked`` (ranked lists: any other task)."""
        if self.fmt == "hpatches":
            return "hpatches"
        return self.task if self.task in ("keypoints", "outcomes") else "ranked"

    @property
    def where(self) -> str:
        """The options' task as the command line names it, for messages."""
        return "--format hpatches" if self.kind == "hpatches" else f"--task {self.task}"

    def distractors(self) -> int | None:
        """The HPatches distractors per retrieval query (None: all of them)."""
        given = self.hpatches_distractors
        if given is None:
            return MATLAB_DISTRACTORS
        if isinstance(given, int) and not isinstance(given, bool) and given >= 1:
            return given
        text = str(given).strip()
        if text.lower() == "all":
            return None
        if text.isdigit() and int(text) >= 1:
            return int(text)
        raise InvalidInput(f"--hpatches-distractors must be a count from 1 or 'all', got {given!r}")


def dispatch(
    store: Database,
    files: Sequence[Source],
    meta: RunMeta,
    options: IngestOptions,
    progress: Progress | None = None,
) -> list[IngestResult]:
    """Ingest ``files`` into the run ``meta`` by the entry point of ``options``' kind; one
    result per task (an HPatches folder gives one per HPatches task, in the order of the
    tasks).

    Raises:
        InvalidInput: as the entry point; with ``--format hpatches``, ``files`` other than one
            folder or ``meta.append`` (checked here, before any file is read).
    """
    o = options
    LOG.debug("%s: %d input(s) into run %s", o.where, len(files), meta.ref)
    if o.kind == "hpatches":
        return ingest_hpatches(
            store, check_hpatches(files, meta), tasks_dir=str(o.hpatches_tasks), meta=meta,
            split=o.hpatches_split or "a", distance=o.distance or "l2",
            distractors=o.distractors(), tasks=HPATCHES_TASKS if o.task is None else (o.task,),
            progress=progress,
        )  # fmt: skip
    if o.kind == "keypoints":
        result = ingest_keypoints(
            store, files, meta=meta, fmt=o.fmt, columns=o.columns, pairs=o.pairs,
            homography_dir=o.homography_dir, disparity_dir=o.disparity_dir,
            disparity_scale=o.disparity_scale, estimate=o.estimate, progress=progress,
        )  # fmt: skip
    elif o.kind == "outcomes":
        result = ingest_outcomes(
            store, files, meta=meta, fmt=o.fmt, columns=o.columns, progress=progress
        )
    else:
        result = ingest(
            store, files, task=str(o.task), meta=meta, fmt=o.fmt, columns=o.columns,
            negate_score=o.negate_score, labels=o.labels, groups=o.groups, voc_gt=o.voc_gt,
            qrels=o.qrels, progress=progress,
        )  # fmt: skip
    return [result]


def check_hpatches(files: Sequence[Source], meta: RunMeta) -> PathLike:
    """The descriptor folder of an HPatches ingest of ``files`` into the run ``meta``.

    Raises:
        InvalidInput: anything but one path in ``files``, or ``meta.append`` (an HPatches
            ingest makes a new run).
    """
    if len(files) != 1:
        raise InvalidInput(
            f"--format hpatches reads one descriptor folder (DESC), got {len(files)} paths"
        )
    if not isinstance(files[0], (str, os.PathLike)):
        raise InvalidInput("--format hpatches reads a descriptor folder (DESC), not a frame")
    if meta.append:
        raise InvalidInput(
            "--append does not apply to --format hpatches: it ingests its tasks into a new run"
        )
    return files[0]
