"""COCO's 12 numbers of a stored detection run, through the whole product, against pycocotools.

The COCO results and annotation files are ingested (``Store.ingest_coco``), evaluated under
``--protocol coco`` (the matches made on first use by :mod:`evalstore.analysis.det_matching`,
the metric SQL ``sql/metrics/coco_*.sql`` over them) and compared with pycocotools 2.0.11 run
on the same files: the 12 numbers of ``summarize()`` and, per category, the mean of
``precision[:, :, k, a, m]`` (and ``recall``) over its cells > -1, to 1e-12. The datasets are
tests/conformance/detsets.py's (crowd regions, ties, images without ground truth or without
detections, a category without annotations, boxes on the area-range bounds, images with more
than 100 detections) and test_coco_match.py's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from evalstore import Store, evaluate
from evalstore.errors import InvalidInput
from evalstore.metrics.det_references import COCO_METRICS
from evalstore.runs.meta import RunMeta
from tests.conformance.detsets import make_detset, run_pycocotools
from tests.conformance.test_coco_match import synthetic

NAMES = [usual for usual, _ in COCO_METRICS.values()]  # summarize()'s order
#: (AP or AR, iouThr, area index, maxDets index) of each number, as _summarizeDets asks
SUMMARY = {
    "AP": (True, None, 0, 2), "AP50": (True, 0.5, 0, 2), "AP75": (True, 0.75, 0, 2),
    "APs": (True, None, 1, 2), "APm": (True, None, 2, 2), "APl": (True, None, 3, 2),
    "AR1": (False, None, 0, 0), "AR10": (False, None, 0, 1), "AR100": (False, None, 0, 2),
    "ARs": (False, None, 1, 2), "ARm": (False, None, 2, 2), "ARl": (False, None, 3, 2),
}  # fmt: skip


def _ingest(store: Store, tmp: Path, name: str, gt: dict, dets: list) -> str:
    (tmp / f"{name}_gt.json").write_text(json.dumps(gt))
    (tmp / f"{name}_dt.json").write_text(json.dumps(dets))
    run = f"det/{name}"
    store.ingest_coco(
        tmp / f"{name}_dt.json", tmp / f"{name}_gt.json", meta=RunMeta(run, git_commit=False)
    )
    return run


def _per_category(e: Any, stat: str) -> dict[str, float | None]:
    """pycocotools' number ``stat`` of each category alone, as summarize's _summarize does."""
    ap, thr, a, m = SUMMARY[stat]
    out: dict[str, float | None] = {}
    for k, cat in enumerate(e.params.catIds):
        s = e.eval["precision"] if ap else e.eval["recall"]
        if thr is not None:
            s = s[np.where(thr == e.params.iouThrs)[0]]
        s = s[:, :, k, a, m] if ap else s[:, k, a, m]
        out[str(cat)] = float(np.mean(s[s > -1])) if (s > -1).any() else None
    return out


def _check(store: Store, run: str, gt: dict, dets: list) -> int:
    e = run_pycocotools(gt, dets)
    overall = evaluate(store, [run], protocol="coco")
    got = dict(zip(overall["metric"].to_list(), overall["value"].to_list(), strict=True))
    assert list(got) == NAMES
    for i, stat in enumerate(NAMES):
        want = e.stats[i]
        have = -1.0 if got[stat] is None else got[stat]
        assert have == pytest.approx(want, rel=1e-12, abs=1e-15), stat
    checked = 0
    per = evaluate(store, [run], protocol="coco", by=["category"])
    for name, (stat, _) in COCO_METRICS.items():  # a category's row is named by the metric
        rows = per.filter((pl.col("metric") == name) & (pl.col("slice") != ""))
        have = dict(zip(rows["slice"].to_list(), rows["value"].to_list(), strict=True))
        want = _per_category(e, stat)
        assert {k.split("=", 1)[-1] for k in have} == set(want), stat
        for key, value in have.items():
            w = want[key.split("=", 1)[-1]]
            assert (value is None) == (w is None), (stat, key)
            if w is not None:
                assert value == pytest.approx(w, rel=1e-12, abs=1e-15), (stat, key)
                checked += 1
    return checked


@pytest.mark.parametrize("seed", range(3))
def test_stored_run_equals_pycocotools(db: Path, tmp_path: Path, seed: int) -> None:
    gt, dets = make_detset(seed)
    with Store(db) as store:
        run = _ingest(store, tmp_path, f"s{seed}", gt, dets)
        assert _check(store, run, gt, dets) > 20


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3, 23))
def test_stored_run_equals_pycocotools_many(db: Path, tmp_path: Path, seed: int) -> None:
    gt, dets = make_detset(seed, n_images=30, n_categories=5, crowded=2)
    with Store(db) as store:
        run = _ingest(store, tmp_path, f"m{seed}", gt, dets)
        assert _check(store, run, gt, dets) > 20


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_matching_sets_equal_pycocotools(db: Path, tmp_path: Path, seed: int) -> None:
    gt, dets = synthetic(seed)
    with Store(db) as store:
        run = _ingest(store, tmp_path, f"c{seed}", gt, dets)
        assert _check(store, run, gt, dets) > 10


def test_matches_are_made_once_and_deleted_with_the_run(db: Path, tmp_path: Path) -> None:
    with Store(db) as store:
        _made_once(store, tmp_path)


def _made_once(db: Store, tmp_path: Path) -> None:
    gt, dets = make_detset(1)
    run = _ingest(db, tmp_path, "once", gt, dets)
    count = "select count(*) from det_matches"
    assert db.con.execute(count).fetchone() == (0,)  # not before the first evaluation
    first = evaluate(db, [run], protocol="coco")
    n = db.con.execute(count).fetchone()
    assert n is not None and n[0] > 0
    again = evaluate(db, [run], protocol="coco", recompute=True)
    assert db.con.execute(count).fetchone() == n  # made once
    assert first["value"].to_list() == again["value"].to_list()
    db.remove(run)
    for table in ("det_matches", "det_positives", "det_matched"):
        assert db.con.execute(f"select count(*) from {table}").fetchone() == (0,), table


def test_a_read_only_store_says_how_to_make_the_matches(tmp_path: Path) -> None:
    gt, dets = make_detset(2)
    path = tmp_path / "ro.duckdb"
    with Store(path) as store:
        run = _ingest(store, tmp_path, "ro", gt, dets)
    with Store(path, read_only=True) as store, pytest.raises(InvalidInput) as caught:
        evaluate(store, [run], protocol="coco")
    message = str(caught.value)
    assert "det/ro" in message and "writable" in message and "\n" not in message
