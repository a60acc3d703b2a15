"""COCO box detection (evalstore.core.detection*) against pycocotools itself, run here.

The reference is pycocotools 2.0.11 (PyPI), whose ``cocoeval.py`` is cocodataset/cocoapi
``PythonAPI/pycocotools/cocoeval.py`` @ 8c9bcc3cf640524c4c20a9c40e89cb6a2f2fa0e9 but for
``np.float`` -> ``float``; its box IoU is ``common/maskApi.c`` ``bbIou`` at that commit. Every
comparison with pycocotools is exact (``np.array_equal``, ``==``): precision, recall, the 12
numbers and per-category AP are equal bit for bit, within the 1e-12 asked.

faster-coco-eval (``COCOeval_faster``, 1.8.0 on PyPI) is a second check. Its one departure seen
here: ``accumulate`` in C++ divides by ``tp + fp`` where pycocotools divides by
``fp + tp + np.spacing(1)`` (MiXaiLL76/faster_coco_eval ``csrc/faster_eval_api/coco_eval/
cocoeval.cpp`` @ 33ab6097d7983940e67591d20af1b4e9f48c4a93)::

    const double precision =
        num_valid_detections > 0
            ? static_cast<double>(true_positives_sum) /
                  num_valid_detections
            : 0.0;

Both agree but where ``tp + fp == 1`` (2 + eps rounds back to 2): there pycocotools has
``1 / (1 + eps) = 0.9999999999999998`` and faster-coco-eval 1.0
(:func:`test_faster_coco_eval_departs_where_one_detection_is_counted`).

A second departure, on ids: a detection matched to a ground truth of negative id is a hit for
pycocotools (``dtm`` holds the id, and ``np.logical_and(dtm, ...)`` reads any nonzero as true)
and a false positive for faster-coco-eval (same file)::

    const auto true_positive =
        detection_match > 0 && !detection_ignores;

(:func:`test_faster_coco_eval_departs_on_negative_ground_truth_ids`). Both read id 0 as
unmatched (faster-coco-eval warns).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from pycocotools import mask as mask_utils
from pycocotools.cocoeval import Params

from evalstore.core.detection import CocoParams, box_iou, to_xywh, truth_columns
from evalstore.core.detection_coco import coco_lists
from evalstore.core.detection_summary import (
    coco_accumulate,
    coco_summarize,
    coco_summarize_by_category,
)
from evalstore.core.point_metrics import ap_coco_of_points
from evalstore.core.points import ranking_points
from evalstore.errors import InvalidInput
from tests.conformance.detsets import (
    columns,
    make_detset,
    run_faster_coco_eval,
    run_pycocotools,
)

#: pycocotools' precision where one counted detection is a hit: 1 / (1 + np.spacing(1))
ONE_HIT = 1 / (1 + np.spacing(1))


def _ours(dataset, results):
    dt, gt, params = columns(dataset, results)
    lists = coco_lists(dt, gt, params)
    precision, recall = coco_accumulate(lists)
    return lists, precision, recall


def _stats(ev) -> list[float | None]:
    return [None if v == -1 else float(v) for v in ev.stats.tolist()]


def _per_category_ap(precision: np.ndarray, k: int) -> float | None:
    # detectron2 (COCOEvaluator._derive_coco_results): precision[:, :, idx, 0, -1], > -1, mean
    p = precision[:, :, k, 0, -1]
    p = p[p > -1]
    return float(np.mean(p)) if p.size else None


def _assert_equal_to_pycocotools(dataset, results) -> None:
    ev = run_pycocotools(dataset, results)
    lists, precision, recall = _ours(dataset, results)
    assert np.array_equal(precision, ev.eval["precision"])
    assert np.array_equal(recall, ev.eval["recall"])
    assert list(coco_summarize(precision, recall, lists.params).values()) == _stats(ev)
    by_cat = coco_summarize_by_category(precision, recall, lists.params)
    assert list(by_cat) == list(ev.params.catIds)
    for k, cat in enumerate(ev.params.catIds):
        assert by_cat[cat]["AP"] == _per_category_ap(ev.eval["precision"], k)


# ----------------------------------------------------------------------------- parameters


def test_params_are_pycocotools_defaults() -> None:
    p, ours = Params(iouType="bbox"), CocoParams()
    assert np.array_equal(np.asarray(ours.iou_thrs), p.iouThrs)
    assert np.array_equal(np.asarray(ours.rec_thrs), p.recThrs)
    assert list(ours.max_dets) == p.maxDets
    assert [list(r) for r in ours.area_rng] == p.areaRng
    assert list(ours.area_lbl) == p.areaRngLbl
    assert ours.iou_thrs.index(0.5) == 0 and ours.iou_thrs.index(0.75) == 5  # summarize's ==


def test_box_iou_is_bbiou() -> None:
    rng = np.random.default_rng(0)
    dt = np.round(rng.uniform(0, 50, (40, 4)), 1)
    gt = np.round(rng.uniform(0, 50, (30, 4)), 1)
    gt[:5] = dt[:5]  # identical boxes
    gt[5] = [dt[6, 0] + dt[6, 2], dt[6, 1], 3, 3]  # touching: overlap 0
    dt[7, 2:] = 0  # an empty box
    crowd = rng.random(30) < 0.3
    want = mask_utils.iou(dt.tolist(), gt.tolist(), crowd.astype(int).tolist())
    assert np.array_equal(box_iou(dt, gt, crowd), want)
    assert box_iou(dt, gt[:0], crowd[:0]).shape == (40, 0)


def test_to_xywh() -> None:
    xywh = np.array([[1.5, 2.0, 3.0, 4.25], [0.0, 0.0, 0.0, 0.0]])
    xyxy = np.c_[xywh[:, :2], xywh[:, :2] + xywh[:, 2:]]
    cxcywh = np.c_[xywh[:, :2] + xywh[:, 2:] / 2, xywh[:, 2:]]
    assert np.array_equal(to_xywh(xyxy, "xyxy"), xywh)
    assert np.array_equal(to_xywh(cxcywh, "cxcywh"), xywh)
    assert np.array_equal(to_xywh(xywh, "xywh"), xywh)
    with pytest.raises(InvalidInput, match="negative side"):
        to_xywh([[5, 5, 4, 9]], "xyxy")
    with pytest.raises(InvalidInput, match="box_format"):
        to_xywh(xywh, "yolo")
    with pytest.raises(InvalidInput, match="not finite"):
        to_xywh([[0, 0, np.nan, 1]], "xywh")


def test_bad_columns_are_refused() -> None:
    dt, gt, params = columns(*make_detset(1, n_images=2, crowded=0))
    with pytest.raises(InvalidInput, match="missing column"):
        coco_lists({k: v for k, v in dt.items() if k != "score"}, gt, params)
    with pytest.raises(InvalidInput, match="different lengths"):
        coco_lists(dt | {"score": dt["score"][1:]}, gt, params)
    with pytest.raises(InvalidInput, match="w at row 0 is not finite"):
        coco_lists(dt | {"w": np.r_[np.nan, dt["w"][1:]]}, gt, params)
    with pytest.raises(InvalidInput, match="negative side"):
        coco_lists(dt, gt | {"h": -gt["h"]}, params)
    with pytest.raises(InvalidInput, match="repeated"):
        truth_columns(gt | {"id": np.zeros_like(gt["id"])})


def test_string_ids_and_empty_sides() -> None:
    # ids as the store keeps them (text): zero-padded, so sorted as the numbers are, the same
    # rows and arrays as with pycocotools' int ids
    dataset, results = make_detset(2)
    dt, gt, params = columns(dataset, results)
    lists = coco_lists(dt, gt, params)
    image, category = "{:09d}".format, "{:03d}".format
    as_text = coco_lists(
        dt | {"image_id": np.array([image(v) for v in dt["image_id"]]),
              "category_id": np.array([category(v) for v in dt["category_id"]]),
              "id": np.array([f"d{v}" for v in dt["id"]])},
        gt | {"image_id": np.array([image(v) for v in gt["image_id"]]),
              "category_id": np.array([category(v) for v in gt["category_id"]])},
        CocoParams(img_ids=tuple(image(v) for v in params.img_ids or ()),
                   cat_ids=tuple(category(v) for v in params.cat_ids or ())),
    )  # fmt: skip
    assert np.array_equal(as_text.label, lists.label) and np.array_equal(as_text.seq, lists.seq)
    assert np.array_equal(coco_accumulate(as_text)[0], coco_accumulate(lists)[0])
    assert as_text.image_id[0] == image(lists.image_id[0])
    # no detection at all: every category with ground truth has AP 0; no ground truth: -1
    none = {k: v[:0] for k, v in dt.items()}
    stats = coco_summarize(*coco_accumulate(coco_lists(none, gt, params)))
    assert stats["AP"] == 0.0 and stats["AR100"] == 0.0
    no_truth = {k: v[:0] for k, v in gt.items()}
    stats = coco_summarize(*coco_accumulate(coco_lists(dt, no_truth, params)))
    assert set(stats.values()) == {None}


# ----------------------------------------------------------------------------- pycocotools


@pytest.mark.parametrize("seed", range(6))
def test_equal_to_pycocotools(seed: int) -> None:
    dataset, results = make_detset(seed)
    assert len({r["image_id"] for r in results if r["image_id"]}) > 1
    _assert_equal_to_pycocotools(dataset, results)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(100, 130))
def test_equal_to_pycocotools_sweep(seed: int) -> None:
    dataset, results = make_detset(seed, n_images=40, n_categories=6, max_gt=9, crowded=3)
    _assert_equal_to_pycocotools(dataset, results)


def test_the_datasets_cover_the_cases() -> None:
    """What make_detset promises, so the comparisons above exercise it."""
    dataset, results = make_detset(0)
    anns = dataset["annotations"]
    per_image: dict[int, int] = {}
    for r in results:
        per_image[r["image_id"]] = per_image.get(r["image_id"], 0) + 1
    assert max(per_image.values()) > 100
    assert any(a["iscrowd"] for a in anns) and any("ignore" in a for a in anns)
    assert {1024.0, 9216.0} & {a["area"] for a in anns}
    assert {im["id"] for im in dataset["images"]} - {a["image_id"] for a in anns}
    scores = [r["score"] for r in results]
    assert len(set(scores)) < len(scores)
    present = {(a["image_id"], a["category_id"]) for a in anns}
    assert any((r["image_id"], r["category_id"]) not in present for r in results)
    lists, _, _ = _ours(dataset, results)
    assert set(lists.label.tolist()) == {-1, 0, 1}


# ----------------------------------------------------------------------------- hand-worked


def _image(img_id: int) -> dict:
    return {"id": img_id, "width": 300, "height": 300}


def _gt(ann_id: int, img: int, box: list[float], area: float, crowd: int = 0, **kw) -> dict:
    return {"id": ann_id, "image_id": img, "category_id": 1, "bbox": box, "area": area,
            "iscrowd": crowd, **kw}  # fmt: skip


def _dt(img: int, box: list[float], score: float) -> dict:
    return {"image_id": img, "category_id": 1, "bbox": box, "score": score}


def _dataset(images: list[int], anns: list[dict]) -> dict:
    return {"images": [_image(i) for i in images], "annotations": anns,
            "categories": [{"id": 1, "name": "a"}]}  # fmt: skip


def test_crowd_region_absorbs_two_detections() -> None:
    # d1, d2 lie inside the crowd region C: intersection over their own area = 1 >= every t,
    # matched to C (ignored: label 0) and C is never consumed; d3 hits R. R's ignore=1 is
    # overwritten by iscrowd=0 (_prepare), so npig = 1. Points (ignored, ignored, hit):
    # rc = [0, 0, 1], pr = [0, 0, 1/(1+eps)] -> every recall threshold reads 1/(1+eps).
    # Had C been consumed by d1, d2 would be a false positive and AP 1/2.
    dataset = _dataset([1], [_gt(1, 1, [0, 0, 100, 100], 10000, crowd=1),
                             _gt(2, 1, [200, 200, 10, 10], 100, ignore=1)])  # fmt: skip
    results = [_dt(1, [10, 10, 20, 20], 0.9), _dt(1, [50, 50, 20, 20], 0.8),
               _dt(1, [200, 200, 10, 10], 0.7)]  # fmt: skip
    lists, precision, _ = _ours(dataset, results)
    all_area = lists.area_index == 0
    assert lists.label[all_area].reshape(10, 3).tolist() == [[0, 0, 1]] * 10
    assert lists.npig[0].tolist() == [1, 1, 0, 0]
    assert np.all(precision[:, :, 0, 0, 2] == ONE_HIT)
    _assert_equal_to_pycocotools(dataset, results)


def test_break_rule() -> None:
    # One detection D = [0, 0, 10, 10]; R = [0, 0, 10, 12] (IoU 100/120 = 0.833) and a crowd
    # region C = D (intersection over D's area 1.0). Sorted ignored-last: R, C. For t <= 0.80,
    # D matches R, then meets C: "if m>-1 and gtIg[m]==0 and gtIg[gind]==1: break", so C's
    # better 1.0 never replaces R: label +1. For t >= 0.85 R is skipped and D matches C: 0.
    dataset = _dataset([1], [_gt(1, 1, [0, 0, 10, 10], 100, crowd=1),
                             _gt(2, 1, [0, 0, 10, 12], 120)])  # fmt: skip
    results = [_dt(1, [0, 0, 10, 10], 0.5)]
    lists, precision, recall = _ours(dataset, results)
    assert lists.label[lists.area_index == 0].tolist() == [1] * 7 + [0] * 3
    assert recall[:, 0, 0, 2].tolist() == [1.0] * 7 + [0.0] * 3
    ap = coco_summarize(precision, recall)["AP"]
    assert ap == pytest.approx(0.7, abs=1e-15)
    _assert_equal_to_pycocotools(dataset, results)


def test_tie_across_images_follows_image_order() -> None:
    # Equal scores 0.5 on images 2 (a hit, first in the results file) and 1 (a miss). accumulate
    # concatenates images in sorted id order, mergesort keeps it: miss (seq 0) then hit (seq 1).
    # rc = [0, 1/2], pr = [0, 1/2], envelope 1/2 up to recall 1/2: AP50 = 51 * 0.5 / 101. The
    # other order would give 51 * 1/(1+eps) / 101. Images are listed [2, 1] in the file.
    dataset = _dataset([2, 1], [_gt(1, 2, [0, 0, 20, 20], 400), _gt(2, 1, [0, 0, 20, 20], 400)])
    results = [_dt(2, [0, 0, 20, 20], 0.5), _dt(1, [100, 100, 20, 20], 0.5)]
    lists, precision, recall = _ours(dataset, results)
    first = (lists.area_index == 0) & (lists.iou_index == 0)
    assert lists.image_id[first].tolist() == [1, 2]
    assert lists.seq[first].tolist() == [0, 1] and lists.label[first].tolist() == [-1, 1]
    assert coco_summarize(precision, recall)["AP50"] == pytest.approx(25.5 / 101, abs=1e-15)
    _assert_equal_to_pycocotools(dataset, results)


def test_area_bounds_are_inclusive_on_both_sides() -> None:
    # area 32**2 is small and medium ("area < lo or area > hi" is outside); 96**2 medium and
    # large. The unmatched detection of area 32 * 32 is counted in both ranges too.
    dataset = _dataset([1], [_gt(1, 1, [0, 0, 40, 40], 32.0**2), _gt(2, 1, [100, 100, 96, 96],
                             96.0**2)])  # fmt: skip
    results = [_dt(1, [0, 0, 40, 40], 0.9), _dt(1, [50, 50, 32, 32], 0.8)]
    lists, _, _ = _ours(dataset, results)
    assert lists.npig[0].tolist() == [2, 1, 2, 1]
    t0 = lists.iou_index == 0
    assert [lists.label[t0 & (lists.area_index == a)].tolist() for a in range(4)] == [
        [1, -1], [1, -1], [1, -1], [0, 0]]  # fmt: skip
    _assert_equal_to_pycocotools(dataset, results)


def test_ground_truth_id_zero_reads_as_unmatched() -> None:
    # dtm holds the matched gt's id: id 0 is "unmatched" to accumulate (a false positive), and
    # the gt still counts in npig; in the ranges that leave out area 400 the "unmatched"
    # detection is then ignored. pycocotools does this; so do we.
    dataset = _dataset([1], [_gt(0, 1, [0, 0, 20, 20], 400)])
    results = [_dt(1, [0, 0, 20, 20], 0.9)]
    lists, precision, recall = _ours(dataset, results)
    assert lists.label.reshape(4, 10).tolist() == [[-1] * 10] * 2 + [[0] * 10] * 2
    assert lists.npig[0].tolist() == [1, 1, 0, 0]
    assert coco_summarize(precision, recall)["AP"] == 0.0
    _assert_equal_to_pycocotools(dataset, results)


# ----------------------------------------------------------------------------- faster-coco-eval


@pytest.mark.parametrize("seed", range(3))
def test_faster_coco_eval_agrees_but_for_one_detection_counted(seed: int) -> None:
    dataset, results = make_detset(seed)
    ev = run_faster_coco_eval(dataset, results)
    lists, precision, recall = _ours(dataset, results)
    assert np.array_equal(recall, ev.eval["recall"])
    departs = precision == ONE_HIT
    assert departs.any()
    assert np.array_equal(ev.eval["precision"], np.where(departs, 1.0, precision))
    ours = coco_summarize(precision, recall, lists.params)
    for (name, value), theirs in zip(ours.items(), ev.stats[:12].tolist(), strict=True):
        assert (value if value is not None else -1) == pytest.approx(theirs, abs=1e-15), name


def test_faster_coco_eval_departs_where_one_detection_is_counted() -> None:
    # one ground truth, one detection on it: pycocotools' precision 1 / (1 + eps), AP
    # 0.9999999999999998; faster-coco-eval's 1 / 1, AP 1.0.
    dataset = _dataset([1], [_gt(1, 1, [0, 0, 20, 20], 400)])
    results = [_dt(1, [0, 0, 20, 20], 0.9)]
    ref, fast = run_pycocotools(dataset, results), run_faster_coco_eval(dataset, results)
    _, precision, recall = _ours(copy.deepcopy(dataset), results)
    assert ref.stats[0] == coco_summarize(precision, recall)["AP"] == ONE_HIT
    assert fast.stats[0] == 1.0
    assert np.all(fast.eval["precision"][:, :, 0, :2, :] == 1.0)


def test_faster_coco_eval_departs_on_negative_ground_truth_ids() -> None:
    # two ground truths (ids -3 and 97), each hit by one detection, and a false positive
    # between them by score: pycocotools hit, miss, hit -> rc [1/2, 1/2, 1], pr [1/(1+eps), 1/2,
    # 2/3], AP = (51 / (1+eps) + 50 * 2/3) / 101; faster-coco-eval reads the hit on -3 as a
    # miss: rc [0, 0, 1/2], pr [0, 0, 1/3], AP = 51 * (1/3) / 101.
    dataset = _dataset([1], [_gt(-3, 1, [0, 0, 20, 20], 400), _gt(97, 1, [100, 100, 20, 20], 400)])
    results = [_dt(1, [0, 0, 20, 20], 0.9), _dt(1, [200, 200, 20, 20], 0.85),
               _dt(1, [100, 100, 20, 20], 0.8)]  # fmt: skip
    ref, fast = run_pycocotools(dataset, results), run_faster_coco_eval(dataset, results)
    _, precision, recall = _ours(dataset, results)
    assert coco_summarize(precision, recall)["AP50"] == ref.stats[1]
    assert ref.stats[1] == pytest.approx((51 + 50 * 2 / 3) / 101, abs=1e-15)
    assert fast.stats[1] == pytest.approx(51 / 3 / 101, abs=1e-15)


# ----------------------------------------------------------------------------- the bridge


def test_ranked_lists_give_ap_coco() -> None:
    """Each (category, area, IoU threshold, maxDets) list through evalstore's ranked-list
    ``ap_coco`` (ties in input order = seq, P = npig, the ground truth no detection matched as
    +1 at -inf): pycocotools' AP of that cell, ``mean(precision[t, :, k, a, m])``, but for the
    ``+ np.spacing(1)`` of pycocotools' precision, which ap_coco leaves out (its docstring):
    where the first counted detection is a hit pycocotools reads 1/(1+eps), ap_coco 1. With
    pycocotools' 1/(1+eps) read as 1, the two are equal bit for bit; as they stand, within
    one ulp of 1 per recall threshold (<= 2.3e-16)."""
    dataset, results = make_detset(3)
    ev = run_pycocotools(dataset, results)
    lists, _, _ = _ours(dataset, results)
    p = lists.params
    T, K, A = len(p.iou_thrs), len(p.cat_ids or ()), len(p.area_rng)
    k_of = np.searchsorted(np.asarray(p.cat_ids), lists.category_id)
    group, score, label, order, npig, cells = [], [], [], [], [], []
    for k in range(K):
        for a in range(A):
            for t in range(T):
                for m, max_det in enumerate(p.max_dets):
                    code = len(cells)
                    rows = (k_of == k) & (lists.area_index == a) & (lists.iou_index == t)
                    rows &= lists.rank < max_det
                    lab = lists.label[rows]
                    missed = int(lists.npig[k, a] - np.count_nonzero(lab == 1))
                    group += [code] * (int(rows.sum()) + missed)
                    score += [*lists.score[rows].tolist(), *[-np.inf] * missed]
                    label += [*lab.tolist(), *[1] * missed]
                    order += [*lists.seq[rows].tolist(), *[10**9] * missed]
                    npig.append(int(lists.npig[k, a]))
                    cells.append((t, k, a, m))
    pts = ranking_points(group, score, label, ties="input", order=order)
    codes = pts.groups.tolist()
    assert np.array_equal(pts.n_positives, np.asarray(npig)[codes])
    ours = ap_coco_of_points(pts)
    precision = ev.eval["precision"]
    theirs = np.array([precision[t, :, k, a, m].mean() for t, k, a, m in cells])[codes]
    undefined = np.array([precision[t, 0, k, a, m] == -1 for t, k, a, m in cells])[codes]
    assert np.array_equal(np.isnan(ours), undefined) and (~undefined).sum() > 100
    read_as_one = np.where(precision == ONE_HIT, 1.0, precision)
    fixed = np.array([read_as_one[t, :, k, a, m].mean() for t, k, a, m in cells])[codes]
    assert np.array_equal(ours[~undefined], fixed[~undefined])
    gap = np.abs(ours - theirs)[~undefined]
    assert 0 < gap.max() <= 2.3e-16
