"""Ingest of a detection run: the images, categories, ground-truth boxes and detections that
a reader (:mod:`evalstore.ingest.formats.coco`, ``voc_det``, ``boxes``) returns, stored raw in
one transaction, so that each detection protocol recomputes its matching from the rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from evalstore.ingest.formats.detection import DetectionInput
from evalstore.ingest.frames import write_tables
from evalstore.ingest.write import IngestResult
from evalstore.runs.meta import RunMeta

if TYPE_CHECKING:
    from evalstore.db.connection import Database

__all__ = ["DetectionResult", "ingest_detections"]


@dataclass
class DetectionResult(IngestResult):
    """What a detection ingest wrote: ``rows`` counts the detections and ``lists`` the
    images, as for every task; ``ground_truth_boxes`` and ``categories`` what else it
    stored."""

    ground_truth_boxes: int = 0
    categories: int = 0


def ingest_detections(
    store: Database, data: DetectionInput, *, meta: RunMeta, files: list[str] | None = None
) -> DetectionResult:
    """Store a detection run (task ``detection``): every image, category, ground-truth box
    and detection of ``data``, all or nothing. ``rows`` counts the detections and ``lists``
    the images."""
    frames = {
        "_det_images": data.images,
        "_det_categories": data.categories,
        # seq: the boxes' order in the input, which COCO's matching reads (a later box wins
        # an equal IoU)
        # (through polars: pyarrow's pa.array imports pandas on its first call, 0.2 CPU s)
        "_det_truth": data.ground_truth.append_column(
            "seq", pl.int_range(data.ground_truth.num_rows, dtype=pl.Int64, eager=True).to_arrow()
        ),
        "_det_boxes": data.detections,
    }
    run_id, replaced = write_tables(store, meta, "detection", meta.replace, meta.append, frames)
    return DetectionResult(
        run_id=run_id,
        experiment=meta.experiment,
        name=meta.name,
        task="detection",
        rows=data.detections.num_rows,
        lists=data.images.num_rows,
        not_retrieved=0,
        replaced=replaced,
        files=files or [],
        ground_truth_boxes=data.ground_truth.num_rows,
        categories=data.categories.num_rows,
    )
