"""evalstore diff: the lists whose value moved most between two runs, and the items of one
list whose rank moved."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ingest_lists

from evalstore import Store, evaluate
from evalstore.core.ranking import ap
from evalstore.runs.meta import RunMeta
from tests.conformance.detsets import make_detset


@pytest.fixture
def two(db: Path) -> Path:
    # list q1: a finds both positives first (AP 1), b ranks them 2nd and 4th (AP 0.5);
    # list q2: the same in both runs; list q3: a ranks its positive 3rd (AP 1/3), b ties it
    # with a negative at the top (AP 0.5 with the tie grouped)
    a = {
        "q1": ([4, 3, 2, 1], [1, 1, -1, -1]),
        "q2": ([2, 1], [1, -1]),
        "q3": ([3, 2, 1], [-1, -1, 1]),
    }
    b = {
        "q1": ([4, 3, 2, 1], [-1, 1, -1, 1]),
        "q2": ([2, 1], [1, -1]),
        "q3": ([3, 3, 1], [1, -1, -1]),
    }
    with Store(db) as store:
        for run, lists in (("e/a", a), ("e/b", b)):
            ingest_lists(store, run, lists)
    return db


def test_lists_by_how_much_their_value_moved(cli: Any, two: Path) -> None:
    got = cli("diff", "e/a", "e/b", "--format", "json")
    assert got.exit_code == 0, got.output
    rows = json.loads(got.stdout)
    assert [r["group_id"] for r in rows] == ["q1", "q3", "q2"]
    want = {
        "q1": (1.0, ap(np.array([4.0, 3, 2, 1]), np.array([-1, 1, -1, 1]))),
        "q2": (1.0, 1.0),
        "q3": (1 / 3, ap(np.array([3.0, 3, 1]), np.array([1, -1, -1]))),
    }
    for r in rows:
        va, vb = want[r["group_id"]]
        assert r["value_a"] == pytest.approx(va) and r["value_b"] == pytest.approx(vb)
        assert r["diff"] == pytest.approx(vb - va)
        assert r["metric"] == "ap" and r["task"] == "retrieval"
    one = cli("diff", "e/a", "e/b", "-n", "1", "--format", "json")
    assert [r["group_id"] for r in json.loads(one.stdout)] == ["q1"]


def test_items_by_how_far_their_rank_moved(cli: Any, two: Path) -> None:
    got = cli("diff", "e/a", "e/b", "--items", "q3", "--format", "json")
    assert got.exit_code == 0, got.output
    rows = {r["item_id"]: r for r in json.loads(got.stdout)}
    # a: scores 3, 2, 1 -> ranks 1, 2, 3; b: 3, 3, 1 -> a tie at rank 1, then 3
    assert {k: (r["rank_a"], r["rank_b"], r["moved"]) for k, r in rows.items()} == {
        "q3-0": (1, 1, 0),
        "q3-1": (2, 1, -1),
        "q3-2": (3, 3, 0),
    }
    assert rows["q3-0"]["label_a"] == -1 and rows["q3-0"]["label_b"] == 1
    assert next(iter(json.loads(got.stdout)))["item_id"] == "q3-1"  # the one that moved


def test_diff_errors_are_one_line(cli: Any, two: Path) -> None:
    for args, message in [
        (("--items", "nope"), 'has a retrieval list "nope"'),
        (("-m", "mapp"), "did you mean"),
        (("--task", "matching"), "no matching values"),
        (("-n", "0"), "--limit must be >= 1"),
        (("--items", "q1", "--iou", "0.5"), "--iou applies to detection runs"),
    ]:
        bad = cli("diff", "e/a", "e/b", *args)
        assert bad.exit_code == 1, (args, bad.output)
        lines = bad.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], (args, bad.stderr)


def test_detection_runs_diff_by_category(cli: Any, db: Path, tmp_path: Path) -> None:
    """A detection run's lists are its categories: diff moves them by COCO's AP50; --items
    CATEGORY lists its objects, found by each run or not (tests/conformance/test_det_items.py
    checks the matches against pycocotools)."""
    gt, dets = make_detset(2, n_images=12, n_categories=4)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    for k in range(2):
        scored = [dict(d, score=d["score"] if k == 0 else 1 - d["score"]) for d in dets]
        (tmp_path / f"dt{k}.json").write_text(json.dumps(scored))
        meta = RunMeta(f"det/r{k}", git_commit=False)
        with Store(db) as store:
            store.ingest_coco(tmp_path / f"dt{k}.json", tmp_path / "gt.json", meta=meta)
    got = cli("diff", "det/r0", "det/r1", "-m", "AP50", "--format", "json")
    assert got.exit_code == 0, got.output
    rows = json.loads(got.stdout)
    with Store(db) as store:
        per = evaluate(store, ["det/r0", "det/r1"], metrics=["AP50"], by=["category"])
    value = {(r, s.split("=", 1)[-1]): v for r, s, v in per.select("run", "slice", "value").rows()}
    moved = [r for r in rows if r["value_a"] is not None]
    assert len(moved) >= 3 and all(r["metric"] == "coco_ap50" for r in rows)
    for r in moved:
        assert r["value_a"] == value[("det/r0", r["group_id"])]
        assert r["value_b"] == value[("det/r1", r["group_id"])]
    cat = str(gt["annotations"][0]["category_id"])
    items = cli("diff", "det/r0", "det/r1", "--items", cat, "-n", "500", "--format", "json")
    assert items.exit_code == 0, items.output
    objects = json.loads(items.stdout)
    want = {str(a["id"]) for a in gt["annotations"]
            if str(a["category_id"]) == cat and not a["iscrowd"]}  # fmt: skip
    assert {r["item_id"] for r in objects} == want
    # the scores of r1 are 1 - those of r0: a found object's detection moves
    assert any(r["moved"] for r in objects if r["moved"] is not None)
    shown = cli("diff", "det/r0", "det/r1", "--items", cat, "--iou", "0.75")
    assert shown.exit_code == 0 and f"objects of {cat} found at IoU 0.75" in shown.stdout
    bad = cli("diff", "det/r0", "det/r1", "--items", cat, "--iou", "0.72")
    assert bad.exit_code == 1 and bad.stderr.startswith("Error: --iou 0.72: one of COCO's")
    assert len(bad.stderr.strip().splitlines()) == 1
