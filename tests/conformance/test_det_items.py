"""The objects a detection run found (``evalstore diff A B --items CATEGORY``) equal the
matches of pycocotools' own ``COCOeval.evaluateImg`` (cocodataset/cocoapi,
PythonAPI/pycocotools/cocoeval.py, run here from PyPI): for area range ``all`` and
``maxDet`` 100, ``dtMatches[t][d]`` is the id of the box detection ``d`` matched at IoU
threshold ``t`` (0 when none) and ``dtIgnore[t][d]`` whether that box is ignored (a crowd
region). An object is found by the detection matched to it and not ignored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalstore.analysis.det_items import object_moves, objects_found
from evalstore.errors import InvalidInput
from evalstore.runs.meta import RunMeta
from tests.conformance.detsets import coco_store, run_pycocotools


def _pycocotools_found(ev: Any, category: int, t: int) -> dict[int, int]:
    """gt id -> the id (from 0, as det_id) of the detection that found it."""
    found = {}
    for e in ev.evalImgs:
        if e is None or e["category_id"] != category or list(e["aRng"]) != [0, 1e10]:
            continue
        assert e["maxDet"] == 100
        for d, g, ignored in zip(e["dtIds"], e["dtMatches"][t], e["dtIgnore"][t], strict=True):
            if g > 0 and not ignored:
                found[int(g)] = int(d) - 1
    return found


@pytest.mark.parametrize("seed", range(6))
def test_objects_found_are_pycocotools_matches(tmp_path: Path, seed: int) -> None:
    store, gt, dets = coco_store(tmp_path, seed, n_images=10, n_categories=3, crowded=2)
    ev = run_pycocotools(gt, dets)
    with store:
        run_id = store.resolve("d/x")
        for cat in sorted({a["category_id"] for a in gt["annotations"]}):
            for t, iou in ((0, 0.5), (5, 0.75), (9, 0.95)):
                got = objects_found(store, run_id, str(cat), iou)
                want = _pycocotools_found(ev, cat, t)
                hit = got.filter(got["det_id"].is_not_null())
                assert dict(zip(hit["gt_id"].cast(int), hit["det_id"], strict=True)) == want
                # every object of the category but crowd regions is an item, found or not
                objects = {a["id"] for a in gt["annotations"]
                           if a["category_id"] == cat and not a["iscrowd"]}  # fmt: skip
                assert set(got["gt_id"].cast(int)) == objects
                # rank: 1 + the kept detections of the category scored higher
                kept = [int(d) - 1 for e in ev.evalImgs if e is not None
                        and e["category_id"] == cat and list(e["aRng"]) == [0, 1e10]
                        for d in e["dtIds"]]  # fmt: skip
                scores = np.array([dets[d]["score"] for d in kept])
                for det_id, rank, score in hit.select("det_id", "rank", "score").rows():
                    assert score == dets[det_id]["score"]
                    assert rank == 1 + int((scores > score).sum())


def test_object_moves_of_two_runs(tmp_path: Path) -> None:
    """Run b drops every detection of the category in the image of the object run a found
    at the best rank: that object is found by a only, and comes first."""
    store, gt, dets = coco_store(tmp_path, 3, n_images=8, n_categories=2, crowded=0)
    with store:
        a = store.resolve("d/x")
        cat = str(gt["annotations"][0]["category_id"])
        every = objects_found(store, a, cat, 0.5)
        best = every.drop_nulls("det_id").sort("rank").row(0, named=True)
        fewer = [
            d
            for d in dets
            if not (str(d["image_id"]) == best["image_id"] and str(d["category_id"]) == cat)
        ]
        (tmp_path / "dt2.json").write_text(json.dumps(fewer))
        store.ingest_coco(tmp_path / "dt2.json", tmp_path / "gt.json",
                          meta=RunMeta("d/y", git_commit=False))  # fmt: skip
        b = store.resolve("d/y")
        moves = object_moves(store, a, b, cat, limit=1000)
        assert sorted(moves["item_id"]) == sorted(every["gt_id"])
        first = moves.row(0, named=True)
        assert (first["item_id"], first["rank_a"], first["rank_b"]) == (
            best["gt_id"],
            best["rank"],
            None,
        )
        assert first["det_a"] == best["det_id"] and first["det_b"] is None
        assert (moves["label_a"] == 1).all() and (moves["label_b"] == 1).all()
        same = moves.filter(moves["rank_a"].is_not_null() & moves["rank_b"].is_not_null())
        assert same.height > 0 and (same["moved"] == same["rank_b"] - same["rank_a"]).all()
        assert object_moves(store, a, b, cat, limit=2).height == 2
        name = next(c["name"] for c in gt["categories"] if str(c["id"]) == cat)
        assert object_moves(store, a, b, name, limit=1000).equals(moves)  # by its name too
        with pytest.raises(InvalidInput, match="one of COCO's thresholds"):
            object_moves(store, a, b, cat, iou=0.52)
        with pytest.raises(InvalidInput, match="neither run has an object of category 'zebra'"):
            object_moves(store, a, b, "zebra")
