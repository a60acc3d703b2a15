"""The objects of one category of two detection runs, found or missed
(``evalstore diff A B --items CATEGORY``).

A detection run's ranked list of a category is its detections, best score first, under
COCO's matching (pycocotools' ``evaluateImg``: area range ``all``, the 100 best detections
of each image, crowd regions never an object to find); a ground-truth object is retrieved at
the rank of the detection matched to it at the IoU threshold, and not retrieved when none
is. So the items two runs share are the objects: which one a run found and the other missed,
and how far the detection that found it moved. The matching is
:func:`evalstore.core.detection_match.coco_match`, the core's transcription of pycocotools
(tests/conformance runs pycocotools against it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from evalstore.core.detection import COCO_AREA_RANGES, COCO_IOU_THRESHOLDS, COCO_MAX_DETS
from evalstore.core.detection_match import box_pairs, coco_match, group_ranks
from evalstore.db import queries
from evalstore.errors import InvalidInput

if TYPE_CHECKING:
    from evalstore.store.facade import Store

__all__ = ["object_moves", "objects_found"]

#: the columns of :func:`object_moves`
COLUMNS = ("item_id", "image_id", "rank_a", "rank_b", "moved", "label_a", "label_b",
           "score_a", "score_b", "det_a", "det_b")  # fmt: skip


def objects_found(store: Store, run_id: int, category: str, iou: float) -> pl.DataFrame:
    """Each ground-truth object of ``category`` (its id or name) in run ``run_id``: gt_id,
    image_id, and the detection that found it at IoU ``iou`` under COCO's matching (det_id,
    its score and its rank in the category's list: 1 + the kept detections scored higher,
    a tie sharing its best rank), NULL when none did. Crowd regions are left out."""
    ((category_id,),) = queries.fetch_rows(
        store.con, "compare/det_category_id", {"run_id": run_id, "category": category}
    )
    bind = {"run_id": run_id, "category_id": category_id}
    dets = queries.fetch(store.con, "compare/det_category_boxes", bind)
    truth = queries.fetch(store.con, "compare/det_category_truth", bind)
    images = {v: i for i, v in enumerate(dict.fromkeys([*truth["image_id"], *dets["image_id"]]))}
    det_img = np.array([images[v] for v in dets["image_id"]], dtype=np.int64)
    gt_img = np.array([images[v] for v in truth["image_id"]], dtype=np.int64)
    score = dets["score"].to_numpy()
    per_image = group_ranks(det_img, score, dets["det_id"].to_numpy())
    kept = per_image < COCO_MAX_DETS[-1]
    d = np.flatnonzero(kept)
    xywh = ("x", "y", "w", "h")
    crowd = truth["iscrowd"].to_numpy().astype(bool)
    pairs = box_pairs(det_img[d], dets.select(xywh).to_numpy()[d], gt_img,
                      truth.select(xywh).to_numpy(), crowd)  # fmt: skip
    m = coco_match(
        det_rank=per_image[d],
        det_area=dets["area"].to_numpy()[d],
        gt_area=truth["area"].to_numpy(),
        gt_crowd=crowd,
        pairs=pairs,
        iou_thresholds=np.array([iou]),
        area_ranges=np.array([COCO_AREA_RANGES[0]], dtype=np.float64),
    )
    found = np.flatnonzero(m.label[0, 0] == 1)  # matched to an object (not a crowd region)
    kept_scores = np.sort(score[d])
    rank = kept_scores.size - np.searchsorted(kept_scores, score[d][found], side="right") + 1
    hits = pl.DataFrame(
        {
            "gt_index": m.gt[0, 0][found],
            "det_id": dets["det_id"].to_numpy()[d][found],
            "score": score[d][found],
            "rank": rank,
        },
        schema={"gt_index": pl.Int64, "det_id": pl.Int64, "score": pl.Float64, "rank": pl.Int64},
    )
    objects = (
        truth.select("gt_id", "image_id")
        .with_row_index("gt_index")
        .with_columns(pl.col("gt_index").cast(pl.Int64))
    )
    return objects.filter(~pl.Series(crowd)).join(hits, on="gt_index", how="left").drop("gt_index")


def object_moves(
    store: Store, a: int, b: int, category: str, *, iou: float = 0.5, limit: int = 20
) -> pl.DataFrame:
    """The objects of ``category`` in runs ``a`` and ``b`` (see the module docstring):
    item_id (the object's annotation id), image_id, rank_a, rank_b (NULL: not found),
    moved (rank_b - rank_a), label_a, label_b (+1: an object of that run's ground truth),
    score_a, score_b and det_a, det_b (the detections that found it). Objects found by one
    run only first, then by |moved|, largest first.

    Raises:
        InvalidInput: ``iou`` is not one of COCO's thresholds, or neither run has an object
            of that category.
    """
    if not any(abs(iou - t) < 1e-9 for t in COCO_IOU_THRESHOLDS):
        shown = ", ".join(f"{t:.2f}" for t in COCO_IOU_THRESHOLDS)
        raise InvalidInput(f"--iou {iou}: one of COCO's thresholds ({shown})")
    sides = []
    for side, run_id in (("a", a), ("b", b)):
        frame = objects_found(store, run_id, category, iou)
        sides.append(
            frame.with_columns(label=pl.lit(1, pl.Int8)).rename(
                {c: f"{c}_{side}" for c in ("rank", "score", "det_id", "label", "image_id")}
            )
        )
    if sides[0].height == 0 and sides[1].height == 0:
        raise InvalidInput(f"neither run has an object of category {category!r}")
    both = sides[0].join(sides[1], on="gt_id", how="full", coalesce=True)
    out = both.select(
        pl.col("gt_id").alias("item_id"),
        pl.coalesce("image_id_a", "image_id_b").alias("image_id"),
        "rank_a",
        "rank_b",
        (pl.col("rank_b") - pl.col("rank_a")).alias("moved"),
        "label_a",
        "label_b",
        "score_a",
        "score_b",
        pl.col("det_id_a").alias("det_a"),
        pl.col("det_id_b").alias("det_b"),
    )
    one_side = pl.col("rank_a").is_null() != pl.col("rank_b").is_null()
    return (
        out.with_columns(_one=one_side, _moved=pl.col("moved").abs())
        .sort(
            ["_one", "_moved", "rank_a", "rank_b", "item_id"],
            descending=[True, True, False, False, False],
            nulls_last=True,
        )
        .drop("_one", "_moved")
        .head(limit)
        .select(COLUMNS)
    )
