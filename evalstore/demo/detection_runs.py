"""The demo's ``detection`` experiment: four detectors on real images, COCO evaluation.

:func:`ingest_runs` records one ``detection/<detector>`` run per detector of
:data:`~evalstore.demo.detection.DETECTORS` (OpenCV's Hough circles, scikit-image's LoG, DoG
and DoH blobs), a week apart, all on one seeded
:func:`~evalstore.demo.detection_data.detection_dataset`: scikit-image's ``coins`` and
``hubble_deep_field`` with their segmented ground truth and :data:`N_AUGMENT` augmentations of
each (:data:`N_AUGMENT_QUICK` in the quick demo). Each run is the detector's COCO results list
and the dataset's annotations, ingested with :meth:`~evalstore.Store.ingest_detections` as box
tables: image ids are the COCO image ids, categories their names (``coin``, ``source``), the
ground truth keeps its annotation id and segmentation ``area`` (the area ranges of the COCO
protocol read it) and the detections their order in the results list (equal scores are ranked
in that order, as pycocotools does).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import polars as pl

from evalstore.demo.detection import DETECTORS, run_detector
from evalstore.demo.detection_data import detection_dataset
from evalstore.runs.meta import RunMeta

if TYPE_CHECKING:
    from evalstore.db.connection import Progress
    from evalstore.store.facade import Store

__all__ = [
    "N_AUGMENT",
    "N_AUGMENT_QUICK",
    "SEED",
    "demo_dataset",
    "ground_truth_frame",
    "ingest_runs",
    "results_frame",
]

#: The seed of the dataset's augmentations and of the detectors' second exposure.
SEED = 0
#: Augmentations of each image set: 2 x (1 + 4) = 10 images in the full demo, 4 in the quick one.
N_AUGMENT = 4
N_AUGMENT_QUICK = 1


def demo_dataset(quick: bool) -> dict[str, Any]:
    """The COCO annotation dict the demo's detection runs are evaluated on."""
    return detection_dataset(SEED, N_AUGMENT_QUICK if quick else N_AUGMENT)


def _box_columns(records: list[dict[str, Any]], names: dict[int, str]) -> dict[str, list[Any]]:
    x, y, w, h = zip(*(r["bbox"] for r in records), strict=True) if records else ([],) * 4
    return {
        "image_id": [r["image_id"] for r in records],
        "category": [names[r["category_id"]] for r in records],
        "x": list(x),
        "y": list(y),
        "w": list(w),
        "h": list(h),
    }


def _names(dataset: dict[str, Any]) -> dict[int, str]:
    return {c["id"]: c["name"] for c in dataset["categories"]}


def ground_truth_frame(dataset: dict[str, Any]) -> pl.DataFrame:
    """The dataset's annotations as a box table (``xywh``) with ``id``, ``area``, ``iscrowd``."""
    annotations = dataset["annotations"]
    return pl.DataFrame(
        {
            "id": [a["id"] for a in annotations],
            **_box_columns(annotations, _names(dataset)),
            "area": [a["area"] for a in annotations],
            "iscrowd": [a["iscrowd"] for a in annotations],
        }
    )


def results_frame(dataset: dict[str, Any], results: list[dict[str, Any]]) -> pl.DataFrame:
    """A COCO results list as a box table (``xywh``) with ``score``, in the list's order."""
    return pl.DataFrame(
        {**_box_columns(results, _names(dataset)), "score": [r["score"] for r in results]},
        schema_overrides={"score": pl.Float64},
    )


def ingest_runs(
    store: Store, *, start: datetime, quick: bool, progress: Progress | None
) -> list[str]:
    """Make the dataset, run the detectors and ingest one ``detection/<detector>`` run each,
    the first at ``start`` plus 4 days, a week apart. Returns the run names."""
    dataset = demo_dataset(quick)
    truth = ground_truth_frame(dataset)
    n_augment = N_AUGMENT_QUICK if quick else N_AUGMENT
    names = []
    for week, detector in enumerate(DETECTORS):
        results = run_detector(detector, dataset, SEED)
        run = f"detection/{detector}"
        meta = RunMeta(
            run,
            params={
                "detector": detector,
                "images": len(dataset["images"]),
                "augmentations": n_augment,
                "seed": SEED,
            },
            tags=["opencv"] if detector == "hough" else ["scikit-image"],
            created_at=start + timedelta(weeks=week, days=4),
            git_commit=None,
            notes="scikit-image's coins and hubble_deep_field, segmented ground truth, "
            f"{n_augment} seeded augmentations of each",
            replace=True,
        )
        store.ingest_detections(results_frame(dataset, results), truth, meta=meta)
        names.append(run)
        if progress is not None:
            progress("detection detectors", week + 1, len(DETECTORS))
    return names
