"""Seeded synthetic detection datasets in COCO's formats, and the two references run on them.

:func:`make_detset` writes an annotation file (as a dict) and a results list with what makes
COCO's matching hard: images of several sizes, some without ground truth; non-contiguous
category ids, one with no annotation; crowd regions; ``area`` fields exactly on the area-range
bounds 32**2 and 96**2 (and boxes of those areas); ``ignore`` fields (which ``_prepare``
overwrites); jittered true positives, duplicates and random false positives; detections of
categories absent from their image; scores rounded so that they tie, within and across
images; images with more than 100 detections.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
from faster_coco_eval import COCO as FasterCOCO
from faster_coco_eval import COCOeval_faster
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

from evalstore import Store
from evalstore.core.detection import CocoParams
from evalstore.runs.meta import RunMeta

SIZES = ((640, 480), (320, 240), (1000, 800), (96, 96))
BOUNDARY_SIDES = ((32.0, 32.0), (96.0, 96.0), (16.0, 64.0), (64.0, 144.0))


def _box(rng: np.random.Generator, width: int, height: int) -> list[float]:
    if rng.random() < 0.15:
        w, h = BOUNDARY_SIDES[rng.integers(len(BOUNDARY_SIDES))]
    else:
        w = float(np.round(rng.uniform(2, width * 0.6), 2))
        h = float(np.round(rng.uniform(2, height * 0.6), 2))
    x = float(np.round(rng.uniform(0, max(width - w, 1)), 2))
    y = float(np.round(rng.uniform(0, max(height - h, 1)), 2))
    return [x, y, w, h]


def _jitter(rng: np.random.Generator, box: list[float], scale: float) -> list[float]:
    x, y, w, h = box
    dx, dy = rng.normal(0, scale * w), rng.normal(0, scale * h)
    dw, dh = rng.normal(0, scale * w), rng.normal(0, scale * h)
    return [float(np.round(v, 2)) for v in (x + dx, y + dy, max(w + dw, 0.5), max(h + dh, 0.5))]


def make_detset(
    seed: int,
    n_images: int = 12,
    n_categories: int = 3,
    max_gt: int = 5,
    crowded: int = 1,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(annotation file, results list) of a seeded synthetic dataset (module docstring);
    ``crowded`` images get 100 to 130 detections."""
    rng = np.random.default_rng(seed)
    cat_ids = sorted(rng.choice(np.arange(1, 30), n_categories + 1, replace=False).tolist())
    used = cat_ids[:-1]  # the last category has no annotation
    images, anns, results = [], [], []
    ann_id = 1
    for i in range(n_images):
        img_id = int(rng.integers(1, 10**6)) * 10 + i  # distinct, not in index order
        width, height = SIZES[rng.integers(len(SIZES))]
        images.append({"id": img_id, "width": width, "height": height, "file_name": f"{i}.jpg"})
        n_gt = 0 if rng.random() < 0.2 else int(rng.integers(1, max_gt + 1))
        present = set()
        for _ in range(n_gt):
            cat = int(rng.choice(used))
            present.add(cat)
            box = _box(rng, width, height)
            crowd = int(rng.random() < 0.12)
            area = box[2] * box[3]
            if (box[2], box[3]) not in BOUNDARY_SIDES and rng.random() < 0.7:
                area = float(np.round(area * rng.uniform(0.4, 1.0), 2))  # a mask's area
            if rng.random() < 0.1:
                area = float(rng.choice([32.0**2, 96.0**2]))  # exactly on a bound
            ann = {"id": ann_id, "image_id": img_id, "category_id": cat, "bbox": box,
                   "area": area, "iscrowd": crowd}  # fmt: skip
            if rng.random() < 0.15:
                ann["ignore"] = int(rng.integers(2))
            anns.append(ann)
            ann_id += 1
            for _ in range(int(rng.choice([0, 1, 1, 1, 2, 3]))):  # hits and duplicates
                results.append(_det(rng, img_id, cat, _jitter(rng, box, rng.uniform(0.0, 0.2))))
        n_fp = int(rng.integers(0, 4))
        if i < crowded:
            n_fp = int(rng.integers(100, 131))
        for _ in range(n_fp):
            cat = int(rng.choice(cat_ids)) if rng.random() < 0.5 else int(rng.choice(used))
            results.append(_det(rng, img_id, cat, _box(rng, width, height)))
    order = rng.permutation(len(results))
    categories = [{"id": c, "name": f"c{c}"} for c in cat_ids]
    dataset = {"images": images, "annotations": anns, "categories": categories}
    return dataset, [results[j] for j in order]


def _det(rng: np.random.Generator, img: int, cat: int, box: list[float]) -> dict[str, Any]:
    score = float(np.round(rng.uniform(0.05, 1.0), 1))  # rounded: ties within and across images
    return {"image_id": img, "category_id": cat, "bbox": box, "score": score}


def columns(
    dataset: dict[str, Any], results: list[dict[str, Any]]
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], CocoParams]:
    """The detections' and ground truth's columns and the ``CocoParams`` that ``COCOeval``
    makes of the annotation file (every image and category); detection ids as ``loadRes``
    numbers them (from 1, in file order)."""

    def cols(rows: list[dict[str, Any]], extra: tuple[str, ...]) -> dict[str, np.ndarray]:
        box = np.array([r["bbox"] for r in rows], dtype=np.float64).reshape(-1, 4)
        out = {k: np.array([r[k] for r in rows]) for k in ("image_id", "category_id", *extra)}
        out.update(x=box[:, 0], y=box[:, 1], w=box[:, 2], h=box[:, 3])
        return out

    dt = cols(results, ("score",))
    dt["id"] = np.arange(1, len(results) + 1)
    gt = cols(dataset["annotations"], ("id", "area", "iscrowd"))
    params = CocoParams(
        img_ids=tuple(im["id"] for im in dataset["images"]),
        cat_ids=tuple(c["id"] for c in dataset["categories"]),
    )
    return dt, gt, params


def run_pycocotools(dataset: dict[str, Any], results: list[dict[str, Any]]) -> Any:
    """``COCOeval(..., 'bbox')`` evaluated, accumulated and summarized, its prints silenced."""
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO()
        gt.dataset = copy.deepcopy(dataset)
        gt.createIndex()
        dt = gt.loadRes(copy.deepcopy(results))
        ev = COCOeval(gt, dt, "bbox")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return ev


def run_faster_coco_eval(dataset: dict[str, Any], results: list[dict[str, Any]]) -> Any:
    """faster-coco-eval's ``COCOeval_faster(..., 'bbox')`` run the same way."""
    gt = FasterCOCO(copy.deepcopy(dataset))
    dt = gt.loadRes(copy.deepcopy(results))
    ev = COCOeval_faster(gt, dt, "bbox", print_function=lambda *a, **k: None)
    ev.evaluate()
    ev.accumulate()
    ev.summarize()
    return ev


def coco_store(tmp_path: Path, seed: int, **kw: Any) -> tuple[Store, dict, list]:
    """A store at ``tmp_path / "s.duckdb"`` holding run ``d/x``: :func:`make_detset` (seed,
    ``kw``) written as ``gt.json`` and ``dt.json`` and ingested as COCO; with the dataset and
    the results."""
    gt, dets = make_detset(seed, **kw)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    store = Store(tmp_path / "s.duckdb")
    store.ingest_coco(
        tmp_path / "dt.json", tmp_path / "gt.json", meta=RunMeta("d/x", git_commit=False)
    )
    return store, gt, dets
