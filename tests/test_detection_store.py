"""A detection run is stored raw: every image, category, box and detection as the reader gave
it, all or nothing, deleted with its run."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from evalstore import RunMeta, Store
from evalstore.errors import InvalidInput, RunExists
from tests.conftest import snapshot

GT = pl.DataFrame({
    "image_id": ["a", "a", "b"], "category": ["cat", "dog", "cat"],
    "x1": [0.0, 10, 5], "y1": [0.0, 10, 5], "x2": [10.0, 30, 25], "y2": [10.0, 40, 15],
    "iscrowd": [0, 0, 1],
})  # fmt: skip
DETS = pl.DataFrame({
    "image_id": ["a", "b", "b"], "category": ["cat", "cat", "dog"],
    "x1": [1.0, 5, 0], "y1": [1.0, 5, 0], "x2": [11.0, 20, 4], "y2": [9.0, 15, 4],
    "score": [0.9, 0.5, 0.2],
})  # fmt: skip


def test_boxes_are_stored_as_read(store: Store, db: Path) -> None:
    result = store.ingest_detections(DETS, GT, meta=RunMeta("det/r1"), box_format="xyxy")
    assert (result.task, result.rows, result.lists) == ("detection", 3, 2)
    rows = store.con.execute(
        "select det_id, image_id, category_id, x, y, w, h, score, area, x2 from det_boxes "
        "order by det_id"
    ).fetchall()  # test-only SQL
    assert rows[0] == (0, "a", "cat", 1.0, 1.0, 10.0, 8.0, 0.9, 80.0, 11.0)
    truth = store.con.execute(
        "select image_id, category_id, w, h, area, iscrowd from det_truth order by all"
    ).fetchall()
    assert truth == [("a", "cat", 10.0, 10.0, 100.0, False), ("a", "dog", 20.0, 30.0, 600.0, False),
                     ("b", "cat", 20.0, 10.0, 200.0, True)]  # fmt: skip
    info = store.run("det/r1")
    assert {t["task"] for t in info["tasks"]} == {"detection"}


def test_a_second_ingest_is_refused_and_rm_deletes_every_row(db: Path) -> None:
    with Store(db) as store:
        store.ingest_detections(DETS, GT, meta=RunMeta("det/r1"), box_format="xyxy")
    before = snapshot(db)
    with Store(db) as store, pytest.raises(RunExists, match="det/r1"):
        store.ingest_detections(DETS, GT, meta=RunMeta("det/r1"), box_format="xyxy")
    assert snapshot(db) == before
    with Store(db) as store:
        store.remove("det/r1")
    after = snapshot(db)
    assert before["det_boxes"] and not after["det_boxes"] and not after["det_truth"]
    assert not after["det_images"] and not after["det_categories"]


def test_bad_boxes_change_nothing(db: Path) -> None:
    before = snapshot(db)
    bad = DETS.with_columns(pl.Series("x2", [0.0, 20, 4]))  # x2 < x1 in the first row
    with Store(db) as store, pytest.raises(InvalidInput):
        store.ingest_detections(bad, GT, meta=RunMeta("det/r1"), box_format="xyxy")
    assert snapshot(db) == before


def test_a_coco_pair_of_files(store: Store, tmp_path: Path) -> None:
    gt = {
        "images": [{"id": 1, "width": 64, "height": 48, "file_name": "1.jpg"}],
        "categories": [{"id": 3, "name": "car"}],
        "annotations": [{"id": 7, "image_id": 1, "category_id": 3, "bbox": [1, 2, 3, 4],
                         "area": 10.5, "iscrowd": 0}],
    }  # fmt: skip
    dets = [{"image_id": 1, "category_id": 3, "bbox": [1, 2, 3, 4], "score": 0.5}]
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    got = store.ingest_coco(tmp_path / "dt.json", tmp_path / "gt.json", meta=RunMeta("det/c"))
    assert (got.rows, got.lists) == (1, 1)
    area = store.con.execute("select area, width from det_truth, det_images").fetchall()
    assert area == [(10.5, 64)]
