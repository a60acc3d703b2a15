"""A user's metric of detection runs: its SQL reads the matches of the protocols, which are
made before it runs, and its values equal the same fraction taken from the pycocotools
transcription's lists (evalstore.core.detection_coco)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl

from evalstore import Store, evaluate
from evalstore.core.detection import CocoParams
from evalstore.core.detection_coco import coco_lists
from evalstore.metrics.det_references import pycocotools_ids, stored_run
from evalstore.metrics.registry import unregister
from evalstore.metrics.user import load_metrics
from evalstore.runs.meta import RunMeta
from tests.conformance.detsets import make_detset

METRIC = """\
-- metric: det_precision50
-- tasks: detection
-- direction: higher
-- The fraction of a category's kept detections that find an object at IoU 0.50.
select m.run_id, m.category_id as group_id,
       avg(case when m.label = 1 then 1.0 else 0.0 end) as value
from det_matches m
join det_thresholds t
  on t.run_id = m.run_id and t.matching = m.matching and t.iou_index = m.iou_index
where list_contains($runs, m.run_id) and m.matching = 'coco' and t.iou = 0.5 and m.label <> 0
group by m.run_id, m.category_id
"""


def test_a_users_metric_of_detections(db: Path, tmp_path: Path) -> None:
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "det_precision50.sql").write_text(METRIC)
    gt, dets = make_detset(4, n_images=16, n_categories=3)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    load_metrics([tmp_path / "metrics"])
    try:
        with Store(db) as store:
            meta = RunMeta("det/u", git_commit=False)
            store.ingest_coco(tmp_path / "dt.json", tmp_path / "gt.json", meta=meta)
            got = evaluate(store, ["det/u"], metrics=["det_precision50"], by=["category"])
            run = stored_run(store.con, store.resolve("det/u"))
    finally:
        unregister("det_precision50")
    dt, gt = dict(run.detections), dict(run.ground_truth)
    for cols in (dt, gt):
        cols["image_id"] = pycocotools_ids(cols["image_id"])
        cols["category_id"] = np.asarray(cols["category_id"], dtype=str)
    gt["id"] = np.asarray(gt["id"], dtype=str)
    lists = coco_lists(dt, gt, CocoParams())
    keep = (lists.iou_index == 0) & (lists.area_index == 0) & (lists.label != 0)
    frame = pl.DataFrame(
        {"category": lists.category_id[keep].astype(str), "hit": lists.label[keep] == 1}
    )
    want = dict(frame.group_by("category").agg(pl.col("hit").mean()).iter_rows())
    rows = got.filter(pl.col("slice") != "")
    have = {s.split("=", 1)[1]: v for s, v in zip(rows["slice"], rows["value"], strict=True)}
    assert set(have) == set(want) and len(want) >= 3
    for category, value in want.items():
        assert np.isclose(have[category], value, rtol=1e-12, atol=0), category
