"""The options of an ingest besides the run's metadata, and which of them apply to which
task: what ``evalstore ingest`` parses, checked and carried to the right entry point.

:class:`IngestOptions` is checked when made: an option of another task (``--pairs`` with
``--task retrieval``, ``--distance`` without ``--format hpatches``) is refused there, and
:func:`dispatch` calls the one entry point the options name
(:func:`~evalstore.ingest.ingest`, :func:`~evalstore.ingest.ingest_keypoints`,
:func:`~evalstore.ingest.ingest_outcomes`, :func:`~evalstore.ingest.ingest_hpatches` or, for
detections, a reader of :mod:`evalstore.ingest.formats` and
:func:`~evalstore.ingest.detections.ingest_detections`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalstore.errors import InvalidInput, option
from evalstore.ingest.detections import ingest_detections
from evalstore.ingest.formats.boxes import BOX_FORMATS, read_boxes
from evalstore.ingest.formats.coco import read_coco
from evalstore.ingest.formats.detection import DetectionInput
from evalstore.ingest.formats.voc_det import read_voc_det
from evalstore.ingest.hpatches import HPATCHES_TASKS, MATLAB_DISTRACTORS, ingest_hpatches
from evalstore.ingest.keypoints import ingest_keypoints
from evalstore.ingest.outcomes import ingest_outcomes
from evalstore.ingest.ranked import ingest
from evalstore.ingest.sources import Source
from evalstore.ingest.write import IngestResult
from evalstore.runs.meta import RunMeta

if TYPE_CHECKING:
    from evalstore.db.connection import Database, Progress

__all__ = [
    "DETECTION_FORMATS",
    "KINDS",
    "IngestOptions",
    "check_detection",
    "check_hpatches",
    "dispatch",
    "read_detections",
]

PathLike = str | os.PathLike[str]

LOG = logging.getLogger(__name__)

#: the kinds of ingest, each with the options that apply to it alone (the others apply to all)
KINDS = ("ranked", "keypoints", "outcomes", "hpatches", "detection")

#: the formats of detection files (a box table, with ``task="detection"`` and no format, is
#: read by its extension)
DETECTION_FORMATS = ("coco", "voc-det")
#: each detection option: where it applies, and what it names (for messages)
_DETECTION_OPTIONS = {
    "coco_gt": (("fmt", "coco"), "FILE (the annotation file, e.g. instances_val2017.json)"),
    "voc_annotations": (("fmt", "voc-det"), "DIR (the devkit's Annotations/ XML files)"),
    "voc_imageset": (("fmt", "voc-det"), "FILE (the image set, e.g. ImageSets/Main/test.txt)"),
    "boxes_gt": (("task", "detection"), "FILE (the ground-truth boxes: Parquet, CSV or NDJSON)"),
    "box_format": (("task", "detection"), "xyxy | xywh | cxcywh"),
}


def _applies(name: str) -> str:
    """Where a detection option applies, as the caller spells it."""
    keyword, value = _DETECTION_OPTIONS[name][0]
    return option(keyword, value)


#: why a detection format takes no --box-format
_FIXED = {
    "coco": "COCO's boxes are [x, y, w, h]",
    "voc-det": "the devkit's boxes are corners x1 y1 x2 y2",
}


@dataclass(frozen=True, kw_only=True)
class IngestOptions:
    """What an ingest reads and how, for every kind of task (the ``evalstore ingest``
    options but the run's metadata, which is a :class:`~evalstore.runs.meta.RunMeta`).

    ``task`` is required but with ``fmt="hpatches"`` (where it picks one of the three
    HPatches tasks) and the detection formats ``"coco"`` and ``"voc-det"`` (whose task is
    ``detection``). ``hpatches_distractors`` is a count from 1 or ``"all"`` (default the
    MATLAB benchmark's 2000). Detections: ``fmt="coco"`` with ``coco_gt`` (the annotation
    file), ``fmt="voc-det"`` with ``voc_annotations`` (the XML folder) and ``voc_imageset``,
    or ``task="detection"`` with ``boxes_gt`` (a box table) and ``box_format`` (default
    ``xywh``).

    Raises:
        InvalidInput: an option given for another kind of task, naming it; with
            ``fmt="hpatches"``, no ``hpatches_tasks``, a ``columns`` mapping, a task that is
            not an HPatches task or a distractor count that is neither a count nor ``all``;
            for detections, a missing ground truth, another ``fmt`` or ``task``, a
            ``columns`` mapping or an unknown ``box_format``.
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
    # detections
    coco_gt: PathLike | None = None
    voc_annotations: PathLike | None = None
    voc_imageset: PathLike | None = None
    boxes_gt: PathLike | None = None
    box_format: str | None = None

    def __post_init__(self) -> None:
        detection = {"coco_gt": self.coco_gt, "voc_annotations": self.voc_annotations,
                     "voc_imageset": self.voc_imageset, "boxes_gt": self.boxes_gt,
                     "box_format": self.box_format}  # fmt: skip
        if self.kind != "detection":
            for name, value in detection.items():
                if value is not None:
                    raise InvalidInput(f"{option(name)} applies only with {_applies(name)}")
        if self.task is None and self.fmt not in ("hpatches", *DETECTION_FORMATS):
            raise InvalidInput(
                f"{option('task')} is required unless {option('fmt', 'hpatches')} is given (or "
                f"{option('fmt', 'coco')} | voc-det, whose task is detection)"
            )
        owners: dict[str, dict[str, object]] = {
            "ranked": {"negate_score": self.negate_score, "labels": self.labels is not None,
                       "groups": self.groups, "voc_gt": self.voc_gt, "qrels": self.qrels},
            "keypoints": {"pairs": self.pairs, "homography_dir": self.homography_dir,
                          "disparity_dir": self.disparity_dir,
                          "disparity_scale": self.disparity_scale, "estimate": self.estimate},
            "hpatches": {"hpatches_tasks": self.hpatches_tasks, "distance": self.distance,
                         "hpatches_split": self.hpatches_split,
                         "hpatches_distractors": self.hpatches_distractors},
        }  # fmt: skip
        for owner, options in owners.items():
            given = [name for name, value in options.items() if value]
            if given and owner != self.kind:
                if owner == "hpatches":
                    raise InvalidInput(
                        f"{option(given[0])} applies only with {option('fmt', 'hpatches')}"
                    )
                raise InvalidInput(f"{option(given[0])} does not apply to {self.where}")
        if self.kind == "hpatches":
            if self.hpatches_tasks is None:
                raise InvalidInput(
                    f"{option('fmt', 'hpatches')} needs {option('hpatches_tasks')} DIR "
                    "(the benchmark's tasks/)"
                )
            if self.columns:
                raise InvalidInput(
                    f"{option('columns')} does not apply to {option('fmt', 'hpatches')}"
                )
            if self.task is not None and self.task not in HPATCHES_TASKS:
                raise InvalidInput(
                    f"{option('fmt', 'hpatches')} computes {', '.join(HPATCHES_TASKS)}; "
                    f"{option('task', self.task)} is none of them"
                )
            self.distractors()  # refused now, not after the folder is read
        if self.kind == "detection":
            self._check_detection(detection)

    def _check_detection(self, given: Mapping[str, object]) -> None:
        """Refuse detection options that do not fit together (the task, the format, the
        ground truth each format needs)."""
        if self.task not in (None, "detection"):
            raise InvalidInput(
                f"{option('fmt', self.fmt)} reads detections: {option('task', self.task)} "
                "does not apply (the task is detection)"
            )
        if self.fmt is not None and self.fmt not in DETECTION_FORMATS:
            raise InvalidInput(
                f"{option('fmt', self.fmt)} does not apply to {option('task', 'detection')}: "
                "box tables are read by their extension (.parquet, .csv, .ndjson, .jsonl); "
                "detection formats: " + ", ".join(DETECTION_FORMATS)
            )
        if self.columns:
            raise InvalidInput(f"{option('columns')} does not apply to {self.where}")
        needs = {
            "coco": {"coco_gt": self.coco_gt},
            "voc-det": {"voc_annotations": self.voc_annotations,
                        "voc_imageset": self.voc_imageset},
            None: {"boxes_gt": self.boxes_gt},
        }[self.fmt]  # fmt: skip
        for name, value in given.items():
            if value is not None and name not in needs and name != "box_format":
                raise InvalidInput(f"{option(name)} applies only with {_applies(name)}")
        if self.fmt is not None and self.box_format is not None:
            raise InvalidInput(
                f"{option('box_format')} does not apply to {self.where}: {_FIXED[self.fmt]}"
            )
        for name, value in needs.items():
            if value is None:
                raise InvalidInput(
                    f"{self.where} needs {option(name)} {_DETECTION_OPTIONS[name][1]}"
                )
        if self.box_format is not None and self.box_format not in BOX_FORMATS:
            raise InvalidInput(
                f"{option('box_format', self.box_format)}: expected one of {', '.join(BOX_FORMATS)}"
            )

    @property
    def kind(self) -> str:
        """``hpatches`` (an HPatches descriptor folder), ``keypoints``, ``outcomes``,
        ``detection`` (``--format coco | voc-det`` or ``--task detection``) or ``ranked``
        (ranked lists: any other task)."""
        if self.fmt == "hpatches":
            return "hpatches"
        if self.fmt in DETECTION_FORMATS or self.task == "detection":
            return "detection"
        return self.task if self.task in ("keypoints", "outcomes") else "ranked"

    @property
    def where(self) -> str:
        """The options' task as the command line names it, for messages."""
        if self.kind == "hpatches" or self.fmt in DETECTION_FORMATS:
            return option("fmt", self.fmt)
        return option("task", self.task)

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
        raise InvalidInput(
            f"{option('hpatches_distractors')} must be a count from 1 or 'all', got {given!r}"
        )


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
            folder or ``meta.append`` (checked here, before any file is read); for
            detections, as :func:`check_detection` and the format's reader.
    """
    o = options
    LOG.debug("%s: %d input(s) into run %s", o.where, len(files), meta.ref)
    if o.kind == "detection":
        paths = check_detection(files, o)
        data = read_detections(paths, o)
        given = [o.coco_gt, o.voc_imageset, o.boxes_gt]
        named = [str(p) for p in (*paths, *given) if p is not None]
        return [ingest_detections(store, data, meta=meta, files=named)]
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


def check_detection(files: Sequence[Source], options: IngestOptions) -> list[PathLike]:
    """The detection files of an ingest of ``files`` under ``options`` (of the ``detection``
    kind): one results file (``--format coco``) or box table (``--task detection``), or the
    devkit's per-class result files (``--format voc-det``).

    Raises:
        InvalidInput: more than one file where one is read, or anything but paths.
    """
    paths = [f for f in files if isinstance(f, (str, os.PathLike))]
    if len(paths) != len(files):
        raise InvalidInput(f"{options.where} reads files, not frames")
    if options.fmt != "voc-det" and len(paths) != 1:
        what = "results file" if options.fmt == "coco" else "file of detections"
        raise InvalidInput(
            f"{options.where} reads one {what} (its ground truth by "
            f"{option('coco_gt' if options.fmt == 'coco' else 'boxes_gt')}), "
            f"got {len(paths)} paths"
        )
    return paths


def read_detections(paths: Sequence[PathLike], options: IngestOptions) -> DetectionInput:
    """The detections in ``paths`` and their ground truth, by the reader ``options`` name
    (:func:`~evalstore.ingest.formats.coco.read_coco`,
    :func:`~evalstore.ingest.formats.voc_det.read_voc_det` or
    :func:`~evalstore.ingest.formats.boxes.read_boxes`)."""
    o = options
    if o.fmt == "coco" and o.coco_gt is not None:
        return read_coco(paths[0], o.coco_gt)
    if o.fmt == "voc-det" and o.voc_annotations is not None and o.voc_imageset is not None:
        return read_voc_det(paths, o.voc_annotations, o.voc_imageset)
    if o.fmt is None and o.boxes_gt is not None:
        return read_boxes(paths[0], o.boxes_gt, o.box_format or "xywh")
    raise InvalidInput(f"{o.where}: not a detection input")  # refused when the options were made


def check_hpatches(files: Sequence[Source], meta: RunMeta) -> PathLike:
    """The descriptor folder of an HPatches ingest of ``files`` into the run ``meta``.

    Raises:
        InvalidInput: anything but one path in ``files``, or ``meta.append`` (an HPatches
            ingest makes a new run).
    """
    if len(files) != 1:
        raise InvalidInput(
            f"{option('fmt', 'hpatches')} reads one descriptor folder (DESC), "
            f"got {len(files)} paths"
        )
    if not isinstance(files[0], (str, os.PathLike)):
        raise InvalidInput(
            f"{option('fmt', 'hpatches')} reads a descriptor folder (DESC), not a frame"
        )
    if meta.append:
        raise InvalidInput(
            f"{option('append', True)} does not apply to {option('fmt', 'hpatches')}: it ingests "
            "its tasks into a new run"
        )
    return files[0]
