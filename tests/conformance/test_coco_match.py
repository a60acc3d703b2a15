"""The vectorised COCO matching (evalstore.core.detection_match) equals pycocotools' own
``COCOeval.evaluateImg``, run here: for every (category, area range, image) of its
``evalImgs``, each kept detection's match (``dtMatches``) and ignore flag (``dtIgnore``) at
every IoU threshold. pycocotools 2.0.11 (cocodataset/cocoapi PythonAPI/pycocotools/cocoeval.py,
commit e81c312b4e5e400c740c66c42eff5ecce6736f65)."""

from __future__ import annotations

import contextlib
import io
from typing import Any

import numpy as np
import pytest
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

from evalstore.core.detection_match import box_pairs, coco_match

MAX_DET = 100
ONE = {"image_id": 1, "category_id": 1}  # the image and category of the hand-worked cases


def synthetic(seed: int, n_images: int = 12, n_cats: int = 3, crowd: float = 0.1):
    """A small COCO set with crowd regions, boxes on the area-range bounds, tied scores,
    images without boxes, more than 100 detections in an (image, category)."""
    rng = np.random.default_rng(seed)
    images = [{"id": i + 1, "width": 200, "height": 200} for i in range(n_images)]
    anns: list[dict[str, Any]] = []
    dets: list[dict[str, Any]] = []
    for image in images[:-1]:  # the last image has no ground truth
        for _ in range(int(rng.integers(0, 6))):
            side = float(rng.choice([32.0, 96.0, rng.uniform(5, 120)]))  # 32**2, 96**2 bounds
            w, h = side, side
            x, y = rng.uniform(0, 80, 2)
            cat = int(rng.integers(1, n_cats + 1))
            area = w * h if rng.random() < 0.7 else w * h * 0.6  # an annotated area != w*h
            anns.append({
                "id": len(anns) + 1, "image_id": image["id"], "category_id": cat,
                "bbox": [float(x), float(y), w, h], "area": area,
                "iscrowd": int(rng.random() < crowd),
            })  # fmt: skip
    for image in images[1:]:  # the first image has no detections
        n = 130 if image["id"] == 2 else int(rng.integers(0, 25))
        own = [a for a in anns if a["image_id"] == image["id"]]
        for _ in range(n):
            if own and rng.random() < 0.6:
                a = own[int(rng.integers(len(own)))]
                x, y, w, h = np.array(a["bbox"]) + rng.normal(0, 4, 4)
                cat = a["category_id"] if rng.random() < 0.85 else int(rng.integers(1, n_cats + 1))
            else:
                x, y = rng.uniform(0, 150, 2)
                w, h = rng.uniform(3, 100, 2)
                cat = int(rng.integers(1, n_cats + 1))
            dets.append({
                "image_id": image["id"], "category_id": cat,
                "bbox": [float(x), float(y), float(max(w, 1)), float(max(h, 1))],
                "score": float(np.round(rng.random(), 1)),  # many ties
            })  # fmt: skip
    categories = [{"id": c, "name": f"c{c}"} for c in range(1, n_cats + 1)]
    return {"images": images, "annotations": anns, "categories": categories}, dets


def reference(gt: dict, dets: list[dict]) -> COCOeval:
    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO()
        coco.dataset = gt
        coco.createIndex()
        e = COCOeval(coco, coco.loadRes(dets), "bbox")
        e.evaluate()
    return e


def ours(e: COCOeval, gt: dict, dets: list[dict]):
    """Our matching of the same rows (as loadRes numbered them: ids 1..n in file order)."""
    images = {im["id"]: i for i, im in enumerate(sorted(gt["images"], key=lambda im: im["id"]))}
    n_cat = len(gt["categories"]) + 1
    anns = gt["annotations"]
    gt_group = np.array([images[a["image_id"]] * n_cat + a["category_id"] for a in anns])
    gt_xywh = np.array([a["bbox"] for a in anns], dtype=float).reshape(-1, 4)
    gt_area = np.array([a["area"] for a in anns], dtype=float)
    gt_crowd = np.array([bool(a["iscrowd"]) for a in anns])
    d_group = np.array([images[d["image_id"]] * n_cat + d["category_id"] for d in dets])
    score = np.array([d["score"] for d in dets])
    # rank in its group by -score, ties in file order; keep the first MAX_DET
    order = np.lexsort((np.arange(len(dets)), -score, d_group))
    starts = np.flatnonzero(np.r_[True, d_group[order][1:] != d_group[order][:-1]])
    rank_sorted = np.arange(order.size) - np.repeat(starts, np.diff(np.r_[starts, order.size]))
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = rank_sorted
    kept = np.flatnonzero(rank < MAX_DET)
    d_xywh = np.array([d["bbox"] for d in dets], dtype=float)[kept]
    pairs = box_pairs(d_group[kept], d_xywh, gt_group, gt_xywh, gt_crowd)
    m = coco_match(
        det_rank=rank[kept], det_area=d_xywh[:, 2] * d_xywh[:, 3], gt_area=gt_area,
        gt_crowd=gt_crowd, pairs=pairs, iou_thresholds=e.params.iouThrs,
        area_ranges=np.array(e.params.areaRng, dtype=float),
    )  # fmt: skip
    return kept, m


@pytest.mark.parametrize("seed", range(6))
def test_every_match_and_ignore_flag_equals_evaluate_img(seed: int) -> None:
    gt, dets = synthetic(seed)
    assert agree(gt, dets) > 1000


def agree(gt: dict, dets: list[dict]) -> int:
    """Assert that every kept detection's match and flag equal evaluateImg's; the count."""
    e = reference(gt, dets)
    kept, m = ours(e, gt, dets)
    position = {int(k) + 1: i for i, k in enumerate(kept)}  # loadRes ids are 1..n
    ann_index = {a["id"]: i for i, a in enumerate(gt["annotations"])}
    checked = 0
    for ev in e.evalImgs:
        if ev is None:
            continue
        a = e.params.areaRng.index(ev["aRng"])
        for j, dt_id in enumerate(ev["dtIds"]):
            d = position[dt_id]
            for t in range(len(e.params.iouThrs)):
                matched = int(ev["dtMatches"][t, j])
                want_gt = ann_index[matched] if matched else -1
                want = 0 if ev["dtIgnore"][t, j] else (1 if matched else -1)
                got = (m.gt[a, t, d], m.label[a, t, d])
                assert got == (want_gt, want), (ev["image_id"], dt_id, t)
                checked += 1
        assert len(ev["dtIds"]) <= MAX_DET
    return checked


def test_a_crowd_region_takes_every_detection_and_a_box_goes_to_the_best_score() -> None:
    """Hand-worked: a crowd region and one box; three detections inside the crowd region,
    one on the box. The crowd region is never consumed, so all three are ignored (0); the
    box goes to its detection (+1)."""
    gt = {
        "images": [{"id": 1, "width": 100, "height": 100}],
        "categories": [{"id": 1, "name": "a"}],
        "annotations": [
            {**ONE, "id": 1, "bbox": [0, 0, 50, 50], "area": 2500, "iscrowd": 1},
            {**ONE, "id": 2, "bbox": [60, 60, 30, 30], "area": 900, "iscrowd": 0},
        ],
    }  # fmt: skip
    dets = [
        {"image_id": 1, "category_id": 1, "bbox": [5, 5, 20, 20], "score": 0.9},
        {"image_id": 1, "category_id": 1, "bbox": [10, 10, 20, 20], "score": 0.8},
        {"image_id": 1, "category_id": 1, "bbox": [60, 60, 30, 30], "score": 0.7},
        {"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.6},
    ]
    e = reference(gt, dets)
    _, m = ours(e, gt, dets)
    assert m.label[0, 0].tolist() == [0, 0, 1, 0]  # area "all", IoU 0.5
    assert m.gt[0, 0].tolist() == [0, 0, 1, 0]


def test_equal_ious_go_to_the_later_box() -> None:
    """Hand-worked: a detection over two boxes side by side has IoU 100 / 200 = 0.5 with
    each; evaluateImg keeps the later box on equal IoU (``if ious < iou: continue``), so the
    first detection takes box 2 and the second, identical, box 1."""
    box = {"image_id": 1, "category_id": 1, "area": 100, "iscrowd": 0}
    gt = {
        "images": [{"id": 1, "width": 100, "height": 100}],
        "categories": [{"id": 1, "name": "a"}],
        "annotations": [
            {**box, "id": 1, "bbox": [0, 0, 10, 10]},
            {**box, "id": 2, "bbox": [10, 0, 10, 10]},
        ],
    }  # fmt: skip
    dets = [
        {"image_id": 1, "category_id": 1, "bbox": [0, 0, 20, 10], "score": s} for s in (0.9, 0.8)
    ]
    assert agree(gt, dets) == 2 * 4 * 10
    _, m = ours(reference(gt, dets), gt, dets)
    assert m.gt[0, 0].tolist() == [1, 0] and m.label[0, 0].tolist() == [1, 1]
    assert m.label[0, 1].tolist() == [-1, -1]  # IoU 0.5 < 0.55
