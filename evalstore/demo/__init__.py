"""The demo: real evaluation runs recorded over several weeks, metrics and dashboards.

Four experiments, from data that ships with scikit-learn and scikit-image or is made here
(no network):

- ``digits``: multi-label classification, PASCAL VOC style. Real classifiers (logistic
  regression at three regularisations, naive Bayes, k-NN, two MLPs) trained on scikit-learn's
  handwritten digits, each configuration with three seeds (``evalstore groups``); one-vs-rest
  scores on the held-out half make one ranked list per class, evaluated with scikit-learn's
  AP and VOC 2007 and 2010 AP and their means.
- ``hpatches``: the HPatches protocol on sequences made from scikit-image's photographs with
  known homographies (viewpoint) and photometric changes (illumination); OpenCV's SIFT, ORB,
  AKAZE, BRISK and a deliberately weakened SIFT give patch verification, image matching and
  patch retrieval lists, plus real keypoint matches for precision@sigma, MMA and homography
  accuracy.
- ``detection``: object detection from boxes, evaluated as pycocotools does (``--protocol
  coco``: AP, AP50 .. ARl, per category). OpenCV's Hough circles and scikit-image's LoG, DoG
  and DoH blob detectors on scikit-image's ``coins`` and ``hubble_deep_field`` and seeded
  augmentations of them, against ground truth made by segmenting the images.
- ``pose``: relative pose, as SuperGlue's evaluation judges matchers (``pose_auc`` at 5, 10
  and 20 degrees). Synthetic two-view scenes with known cameras (K0, K1, T_0to1) and two
  simulated matchers (pixel noise, outliers), each with three seeds; the pose of each pair
  is estimated from its matches by OpenCV's RANSAC when a metric first needs it.

The package: :mod:`~evalstore.demo.digits` (the digits experiment),
:mod:`~evalstore.demo.hpatches` (the hpatches experiment) and the HPatches-style data it
records: :mod:`~evalstore.demo.sequences`, :mod:`~evalstore.demo.patches`,
:mod:`~evalstore.demo.descriptors`, :mod:`~evalstore.demo.tasks` and
:mod:`~evalstore.demo.matches`; the detection experiment
(:mod:`~evalstore.demo.detection_runs`) and its images and detectors
(:mod:`~evalstore.demo.detection_data`, :mod:`~evalstore.demo.detection`); the pose
experiment (:mod:`~evalstore.demo.pose_runs`) and its scenes
(:mod:`~evalstore.demo.pose_scenes`); :func:`build` records the four experiments.
scikit-learn, scikit-image and OpenCV are imported when the demo is built, not with the
package.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from evalstore.analysis.evaluate import evaluate
from evalstore.dashboards import write_dashboards
from evalstore.demo import detection_runs, digits, hpatches, pose_runs

if TYPE_CHECKING:
    from evalstore.db.connection import Progress
    from evalstore.store.facade import Store

__all__ = ["DIGITS_METRICS", "PROTOCOLS_SHOWN", "DemoResult", "build"]

START = datetime(2026, 9, 7, 9, 30)


@dataclass
class DemoResult:
    """What the demo wrote."""

    runs: list[str] = field(default_factory=list)
    dashboards: list[Path] = field(default_factory=list)
    seconds: float = 0.0


#: The official protocols the demo also evaluates under (``evalstore protocols``).
PROTOCOLS_SHOWN = {
    "digits": ("voc07", "voc07-numpy"),
    "hpatches": ("hpatches", "superpoint"),
    "detection": ("coco",),
    "pose": pose_runs.PROTOCOLS,
}


#: The digits runs' metrics beside the task's standard APs: the multi-label F1 family (every
#: label whose probability is at least 0.5, and each image's top 3), top-1 and top-5 accuracy,
#: macro and micro F1, balanced accuracy and the expected calibration error (15 bins).
DIGITS_METRICS = (
    "cp", "cr", "cf1", "op", "or", "of1",
    "cp_at_k", "cr_at_k", "cf1_at_k", "op_at_k", "or_at_k", "of1_at_k",
    "top1_accuracy", "topk_accuracy", "f1_macro", "f1_micro", "balanced_accuracy", "ece",
)  # fmt: skip


def build(
    store: Store,
    *,
    out: Path | None = None,
    quick: bool = False,
    progress: Progress | None = None,
) -> DemoResult:
    """Build (or refresh) the demo runs in ``store``, compute their metrics and, with
    ``out``, write the dashboards there. ``quick`` makes a smaller demo with every task."""
    started = time.perf_counter()
    result = DemoResult()
    result.runs += digits.ingest_runs(store, start=START, quick=quick, progress=progress)
    result.runs += hpatches.ingest_runs(store, start=START, quick=quick, progress=progress)
    result.runs += detection_runs.ingest_runs(store, start=START, quick=quick, progress=progress)
    result.runs += pose_runs.ingest_runs(store, start=START, quick=quick, progress=progress)
    # the pose runs get the pose metrics (pose_runs.evaluate_runs), not the homography ones
    pose = [r for r in result.runs if r.startswith("pose/")]
    others = [r for r in result.runs if r not in pose]
    evaluate(store, others, by=("class",), progress=progress)
    hpatches_runs = [r for r in result.runs if r.startswith("hpatches/")]
    evaluate(store, hpatches_runs, by=("noise", "kind"), progress=progress)
    # the numbers as the benchmarks' own code computes them, each under its protocol's name
    digits_runs = [r for r in result.runs if r.startswith("digits/")]
    for name in PROTOCOLS_SHOWN["digits"]:
        evaluate(store, digits_runs, by=("class",), protocol=name, progress=progress)
    # beside the APs, what multi-label and single-label papers report of the same scores
    evaluate(store, digits_runs, metrics=list(DIGITS_METRICS), by=("class",), progress=progress)
    for name in PROTOCOLS_SHOWN["hpatches"]:
        evaluate(store, hpatches_runs, protocol=name, progress=progress)
    detection = [r for r in result.runs if r.startswith("detection/")]
    evaluate(store, detection, by=("category",), progress=progress)
    for name in PROTOCOLS_SHOWN["detection"]:
        evaluate(store, detection, by=("category",), protocol=name, progress=progress)
    pose_runs.evaluate_runs(store, pose, progress=progress)
    if out is not None:
        result.dashboards = write_dashboards(store, out, progress=progress)
    result.seconds = time.perf_counter() - started
    return result
