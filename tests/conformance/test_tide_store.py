"""TIDE's breakdown of a stored detection run, through the whole product, against tidecv.

A COCO results file and its annotations (tests/conformance/detsets.py's seeded sets: crowd
regions, tied scores, images without ground truth) are ingested, evaluated under
``--protocol tide`` (the breakdown made on first use and stored in ``det_tide``), and compared
with tidecv 1.0.1 run on the same rows (images registered in id order, as evalstore takes
them): the mAP, each main and special error's dAP, the error counts, and per category the AP
and each dAP (``run.fix_errors`` of that class), exactly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from tidecv import TIDE
from tidecv.errors.main_errors import FalsePositiveError

from evalstore import Store, evaluate
from evalstore.metrics.det_references import TIDE_METRICS
from evalstore.runs.meta import RunMeta
from tests.conformance.detsets import make_detset
from tests.conformance.test_tide import reference


def _columns(gt: dict[str, Any], dets: list[dict[str, Any]]) -> tuple[dict, dict]:
    det = {k: [] for k in ("image_id", "category_id", "score", "x", "y", "w", "h")}
    for d in dets:
        for k, v in zip(("x", "y", "w", "h"), d["bbox"], strict=True):
            det[k].append(v)
        for k in ("image_id", "category_id", "score"):
            det[k].append(d[k])
    truth = {k: [] for k in ("image_id", "category_id", "x", "y", "w", "h", "iscrowd")}
    for a in gt["annotations"]:
        for k, v in zip(("x", "y", "w", "h"), a["bbox"], strict=True):
            truth[k].append(v)
        for k in ("image_id", "category_id", "iscrowd"):
            truth[k].append(a[k])
    return det, truth


@pytest.mark.parametrize("seed", [0, 1, 5])
def test_stored_run_equals_tidecv(db: Path, tmp_path: Path, seed: int) -> None:
    gt, dets = make_detset(seed, n_images=16, n_categories=4)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    det, truth = _columns(gt, dets)
    images = sorted(im["id"] for im in gt["images"])
    run, main, special, counts = reference(det, truth, images=images)
    with Store(db) as store:
        store.ingest_coco(
            tmp_path / "dt.json", tmp_path / "gt.json", meta=RunMeta("det/t", git_commit=False)
        )
        got = evaluate(store, ["det/t"], protocol="tide")
        values = dict(zip(got["metric"].to_list(), got["value"].to_list(), strict=True))
        stored = store.con.sql("select * from det_tide").pl()
    assert set(values) == set(TIDE_METRICS)
    assert values["tide_ap"] == run.ap
    for name, (error, _) in TIDE_METRICS.items():
        if error != "AP":
            assert values[name] == {**main, **special}[error], name
    run_rows = stored.filter(pl.col("category_id").is_null() & (pl.col("error") != "AP"))
    assert dict(zip(run_rows["error"], run_rows["n_errors"], strict=True)) == {
        **counts, "FalsePos": None, "FalseNeg": None,
    }  # fmt: skip
    fixed = {
        e.short_name: run.fix_errors(lambda x, e=e: isinstance(x, e)) for e in TIDE._error_types
    }
    fixed_special = {
        "FalsePos": run.fix_errors(transform=FalsePositiveError.fix),
        "FalseNeg": run.fix_errors(false_neg_dict=run.false_negatives),
    }
    per = stored.filter(pl.col("category_id").is_not_null())
    checked = 0
    for cat, obj in run.ap_data.objs.items():
        rows = per.filter(pl.col("category_id") == str(cat))
        have = dict(zip(rows["error"], rows["value"], strict=True))
        ap = obj.get_ap()
        assert have["AP"] == ap
        for k, v in fixed.items():
            assert have[k] == max(v.objs[cat].get_ap() - ap, 0), (cat, k)
        for k, v in fixed_special.items():
            assert have[k] == v.objs[cat].get_ap() - ap, (cat, k)
        checked += 1
    assert checked >= 3
