"""TIDE (``evalstore.core.detection_tide``) against ``tidecv`` 1.0.1 itself, run in memory.

The reference is dbolya/tide @ 49a5d2a4aeb56795e93a3ed7cc7e6d25757bb4c1 (the PyPI package's
files, CRLF line ends aside): ``tidecv/quantify.py``, ``tidecv/ap.py``,
``tidecv/errors/main_errors.py``, ``tidecv/errors/error.py``. The lines that define the numbers:

    # quantify.py, TIDEExample._run: greedy matching, inclusive threshold
    gt_idx = np.argmax(iou_buffer[pred_idx, :]); iou = iou_buffer[pred_idx, gt_idx]
    if iou >= self.pos_thresh: ... iou_buffer[:, gt_idx] = 0
    # quantify.py, TIDERun._eval_image: the error tests, in this order
    if self.bg_thresh <= ex.gt_cls_iou[pred_idx, idx] <= self.pos_thresh: BoxError
    if ex.gt_noncls_iou[pred_idx, idx] >= self.pos_thresh: ClassError
    if ex.gt_used_cls[pred_idx, idx] >= self.pos_thresh: DuplicateError
    if ex.gt_iou[pred_idx, idx] <= self.bg_thresh: BackgroundError
    else: OtherError
    # quantify.py, TIDERun.fix_main_errors
    errors[error] = max(new_ap - last_ap, 0)
    # ap.py, APDataObject.get_ap
    indices = np.searchsorted(recalls, x_range, side='left')
    return sum(y_range) / len(y_range) * 100

Every value is compared with ``==`` (the transcription performs tidecv's float operations in
its order), which is stricter than the 1e-12 asked.
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

import numpy as np
import pytest
from tidecv import TIDE, Data
from tidecv.errors.main_errors import FalsePositiveError

from evalstore.core.detection_tide import MAIN_ERRORS, SPECIAL_ERRORS, TideResult, tide_errors
from evalstore.errors import InvalidInput

DET = ("image_id", "category_id", "score", "x", "y", "w", "h")
GT = ("image_id", "category_id", "x", "y", "w", "h", "iscrowd")


def generate(
    seed: int,
    *,
    images: int = 8,
    classes: int = 3,
    per_image: int = 5,
    ties: bool = False,
    grid: bool = False,
):
    """Seeded boxes with every error type: per ground truth 0-3 detections, each a close
    copy (a true positive, or a duplicate), a close copy of another class (Cls), a shifted
    copy (Loc) or a shifted copy of another class (Both); unmatched ground truth (Miss); random
    boxes (Bkg), some on images without ground truth (registered or not); crowd regions (some
    of category -1, which tidecv lets match every class); scores on a grid of 5 when ``ties``;
    ``grid``: boxes on a grid of 5 pixels, so that IoUs fall on the thresholds (0.5, 0.1)."""
    rng = np.random.default_rng(seed)
    det: dict[str, list[Any]] = {k: [] for k in DET}
    gt: dict[str, list[Any]] = {k: [] for k in GT}

    def score() -> float:
        s = float(rng.random())
        return round(s * 4) / 4 if ties else s

    def snap(values: list[float]) -> list[float]:
        return [max(5.0, round(v / 5) * 5) if grid else v for v in values]

    def add(cols: dict[str, list[Any]], names: tuple[str, ...], *values: Any) -> None:
        for k, v in zip(names, values, strict=True):
            cols[k].append(v)

    for img in range(images):
        for _ in range(int(rng.integers(0, per_image + 1))):
            c = int(rng.integers(1, classes + 1))
            w, h = snap(rng.uniform(5, 40, 2).tolist())
            x, y = snap(rng.uniform(0, 100, 2).tolist())
            crowd = int(rng.random() < 0.1)
            add(gt, GT, img, -1 if crowd and rng.random() < 0.3 else c, x, y, w, h, crowd)
            for _ in range(int(rng.integers(0, 4))):
                kind = int(rng.integers(0, 5))  # 0, 2: same class; 1, 3: any class
                cc = c if kind in (0, 2, 4) else int(rng.integers(1, classes + 1))
                j = 0.1 if kind in (0, 1) else 0.6
                box = [x + rng.normal(0, j * w), y + rng.normal(0, j * h)]
                box += [w * rng.uniform(0.7, 1.4), h * rng.uniform(0.7, 1.4)]
                add(det, DET, img, cc, score(), *snap(box))
        for _ in range(int(rng.integers(0, 3))):
            on = img + images if rng.random() < 0.15 else img  # an image without ground truth
            c = int(rng.integers(1, classes + 2))  # classes + 1: a class without ground truth
            add(det, DET, on, c, score(), *rng.uniform(0, 120, 2), *rng.uniform(3, 30, 2))
    registered = [images + i for i in range(0, images, 2)]  # the others' detections are dropped
    return det, gt, registered


def reference(det, gt, *, images=(), max_dets=100, pos=0.5, bg=0.1):
    """tidecv on the same rows, in the same order: (run, main, special, counts)."""
    gt_data = Data("gt", max_dets=max_dets)
    for i in images:
        gt_data.add_image(i, f"image {i}")
    for r in range(len(gt["x"])):
        box = [float(gt[k][r]) for k in "xywh"]
        if gt["iscrowd"][r]:
            gt_data.add_ignore_region(gt["image_id"][r], gt["category_id"][r], box)
        else:
            gt_data.add_ground_truth(gt["image_id"][r], gt["category_id"][r], box)
    preds = Data("run")
    for r in range(len(det["x"])):
        box = [float(det[k][r]) for k in "xywh"]
        preds.add_detection(det["image_id"][r], det["category_id"][r], det["score"][r], box)
    tide = TIDE(pos_threshold=pos, background_threshold=bg)
    with contextlib.redirect_stdout(io.StringIO()):
        run = tide.evaluate(gt_data, preds, mode=TIDE.BOX)
        main = tide.get_main_errors()["run"]
        special = tide.get_special_errors()["run"]
    counts = {k.short_name: v for k, v in run.count_errors().items()}
    return run, main, special, counts


def assert_equal(got: TideResult, run, main, special, counts) -> None:
    """Run level (``run.ap``, ``get_main_errors``, ``get_special_errors``, ``count_errors``)
    and per class: ``run.ap_data.objs[c].get_ap()`` and the same class of ``run.fix_errors``
    for each error type (main: ``max(fixed - ap, 0)`` as at run level; special: not clipped)."""
    assert got.ap == run.ap
    assert got.main == main
    assert got.special == special
    assert got.counts == counts
    want = per_class(run)
    assert list(got.per_category) == list(want)
    for c, values in want.items():
        cat = got.per_category[c]
        assert {"AP": cat.ap, **cat.main, **cat.special} == values


def per_class(run) -> dict[Any, dict[str, float]]:
    """tidecv's numbers of each class of ``run`` (``run.ap_data.objs``, in its order): ``AP``,
    the class's ``get_ap()``, and per error type (short names) the AP of that class in
    ``run.fix_errors`` with those errors fixed, minus it: main errors clipped at 0 as
    ``fix_main_errors`` clips the run's, special ones not (``fix_special_errors``). tidecv 1.0.1
    prints no per-class dAP: this is its run-level formula applied to one class's AP."""
    fixed = {
        e.short_name: run.fix_errors(lambda x, e=e: isinstance(x, e)) for e in TIDE._error_types
    }
    special = {
        "FalsePos": run.fix_errors(transform=FalsePositiveError.fix),
        "FalseNeg": run.fix_errors(false_neg_dict=run.false_negatives),
    }
    out = {}
    for c, obj in run.ap_data.objs.items():
        ap = obj.get_ap()
        out[c] = {"AP": ap, **{k: max(v.objs[c].get_ap() - ap, 0) for k, v in fixed.items()}}
        out[c] |= {k: v.objs[c].get_ap() - ap for k, v in special.items()}
    return out


def check(seed: int, *, max_dets: int = 100, pos: float = 0.5, bg: float = 0.1, **gen: Any):
    det, gt, images = generate(seed, **gen)
    ours = tide_errors(
        det, gt, images=images, max_dets=max_dets, pos_threshold=pos, background_threshold=bg
    )
    assert_equal(ours, *reference(det, gt, images=images, max_dets=max_dets, pos=pos, bg=bg))
    return ours


FAST = [
    (1, {}),
    (2, {"ties": True}),
    (3, {"max_dets": 6, "per_image": 8}),  # more detections than max_dets per image
    (4, {"ties": True, "max_dets": 4}),
    (5, {"pos": 0.75, "bg": 0.2}),
    (6, {"pos": 0.3, "bg": 0.05, "ties": True}),
    (7, {"grid": True, "images": 12, "per_image": 8}),
    (8, {"grid": True, "ties": True, "images": 12, "per_image": 8}),
]


@pytest.mark.parametrize(("seed", "options"), FAST)
def test_generated_equal_tidecv(seed: int, options: dict[str, Any]) -> None:
    check(seed, **options)


def test_every_error_type_occurs_and_moves_the_ap() -> None:
    """The generated data is not vacuous: over these seeds every error type is found, and each
    dAP (main and special) is nonzero at least once."""
    results = [check(seed, **options) for seed, options in FAST[:3]]
    for kind in MAIN_ERRORS:
        assert sum(r.counts[kind] for r in results) > 0, kind
        assert any(r.main[kind] > 0 for r in results), kind
    for kind in SPECIAL_ERRORS:
        assert any(r.special[kind] != 0 for r in results), kind


@pytest.mark.slow
@pytest.mark.parametrize("block", range(4))
def test_generated_sweep(block: int) -> None:
    for seed in range(100 + 50 * block, 150 + 50 * block):
        options: dict[str, Any] = {"ties": seed % 2 == 0, "grid": seed % 4 < 2}
        options.update(images=12, per_image=8)
        if seed % 3 == 0:
            options.update(max_dets=int(seed % 7) + 1, per_image=10)
        if seed % 5 == 0:
            options.update(pos=0.6, bg=0.15)
        check(seed, **options)


def test_hand_worked() -> None:
    """One image, class 1: ground truth A, B, C; detections: 0.9 on A (TP), 0.8 on A again
    (Dupe), 0.7 of class 2 on B (Cls); C is a Miss. Class 1: recall 1/3 at precision 1 -> 34
    of the 101 bars: AP 3400/101; class 2 has a point and no positive: AP 0, yet counted, so
    mAP = 1700/101. Fixing Cls makes 0.7 a TP of class 1 (recall 2/3 at precision 2/3: 34 bars
    of 1, 33 of 2/3, AP (34 + 22) * 100/101) and leaves class 2 empty, out of the mean."""
    det = {"image_id": [1, 1, 1], "category_id": [1, 1, 2], "score": [0.9, 0.8, 0.7]}
    det |= {"x": [0, 1, 20], "y": [0, 1, 20], "w": [10] * 3, "h": [10] * 3}
    gt = {"image_id": [1, 1, 1], "category_id": [1, 1, 1], "iscrowd": [0, 0, 0]}
    gt |= {"x": [0, 20, 40], "y": [0, 20, 40], "w": [10] * 3, "h": [10] * 3}
    got = tide_errors(det, gt)
    assert got.counts == {"Cls": 1, "Loc": 0, "Both": 0, "Dupe": 1, "Bkg": 0, "Miss": 1}
    assert got.ap == pytest.approx(1700 / 101, rel=1e-12)
    assert got.main["Cls"] == pytest.approx((34 + 33 * 2 / 3) * 100 / 101 - 1700 / 101, rel=1e-12)
    # Miss: class 1 with 2 positives, recall 1/2 -> 51 bars; mean with class 2's 0
    assert got.main["Miss"] == pytest.approx(5100 / 101 / 2 - 1700 / 101, rel=1e-12)
    assert got.main["Dupe"] == 0  # the envelope keeps precision 1 up to recall 1/3 either way
    # per class: class 1 gains (34 + 22) * 100/101 - 3400/101 = 2200/101, class 2 (empty once
    # fixed: get_ap() 0) nothing; the run's dAP, 3900/101, is not their mean
    assert got.main["Cls"] == pytest.approx(3900 / 101, rel=1e-12)
    assert got.per_category[1].main["Cls"] == pytest.approx(2200 / 101, rel=1e-12)
    assert got.per_category[2].main["Cls"] == 0
    assert_equal(got, *reference(det, gt))


# ------------------------------------------------------------------ tidecv's own behaviour
# Each is tidecv's, reproduced here and documented; the first two look like bugs.


def one_box(image: int = 1) -> dict[str, list[Any]]:
    return {"image_id": [image], "category_id": [1], "iscrowd": [0]} | {
        "x": [0.0], "y": [0.0], "w": [10.0], "h": [10.0]
    }  # fmt: skip


def test_thresholds_are_inclusive() -> None:
    """IoU exactly 0.5 (a 10 x 10 box in a 10 x 20 one): ``iou >= pos_thresh`` matches; a
    second such box on the matched ground truth is Loc (``bg <= iou <= pos``), not Dupe."""
    det = {"image_id": [1, 1], "category_id": [1, 1], "score": [0.9, 0.8]}
    det |= {"x": [0.0, 0.0], "y": [0.0, 0.0], "w": [10.0, 10.0], "h": [10.0, 10.0]}
    gt = one_box() | {"h": [20.0]}
    got = tide_errors(det, gt)
    assert got.counts == {"Cls": 0, "Loc": 1, "Both": 0, "Dupe": 0, "Bkg": 0, "Miss": 0}
    assert got.per_category[1].ap == 100
    assert_equal(got, *reference(det, gt))


def test_ties_make_fixing_nothing_change_the_ap() -> None:
    """fix_errors pushes the errors first, then the true positives: at equal scores a false
    positive moves ahead of a true positive. One ground truth, a TP and a background box both
    at 0.5 (TP first): AP 100, but ``fix_errors()`` with nothing to fix gives 50, so FalseNeg,
    which fixes nothing here (every ground truth is matched), reads -50."""
    det = {"image_id": [1, 1], "category_id": [1, 1], "score": [0.5, 0.5]}
    det |= {"x": [0.0, 50.0], "y": [0.0, 50.0], "w": [10.0, 10.0], "h": [10.0, 10.0]}
    run, _, special, _ = reference(det, one_box())
    assert run.ap == 100 and run.fix_errors().get_mAP() == 50
    got = tide_errors(det, one_box())
    assert got.special == special == {"FalsePos": 0.0, "FalseNeg": -50.0}


def test_scores_at_or_below_minus_one_fail_in_tidecv() -> None:
    """BestGTMatch starts from ``best_score = -1`` with a strict ``<``: a Loc error scoring
    -2 never sets ``best_id``, and ``fix()`` raises KeyError. evalstore refuses it in a line."""
    det = {"image_id": [1], "category_id": [1], "score": [-2.0]}
    det |= {"x": [3.0], "y": [3.0], "w": [10.0], "h": [10.0]}
    with pytest.raises(KeyError, match="best_id"):
        reference(det, one_box())
    with pytest.raises(InvalidInput, match="<= -1"):
        tide_errors(det, one_box())


def test_max_dets_is_the_ground_truths_and_cuts_all_classes() -> None:
    """``TIDERun`` takes ``gt.max_dets`` (the predictions' Data's is unused), and cuts each
    image's detections of every class together, after sorting by score."""
    det = {"image_id": [1, 1], "category_id": [2, 1], "score": [0.9, 0.5]}
    det |= {"x": [50.0, 0.0], "y": [50.0, 0.0], "w": [10.0, 10.0], "h": [10.0, 10.0]}
    assert reference(det, one_box(), max_dets=1)[0].ap == 0  # the TP is cut; class 2: AP 0
    assert tide_errors(det, one_box(), max_dets=1).ap == 0
    assert tide_errors(det, one_box(), max_dets=2).ap == reference(det, one_box())[0].ap == 50


def test_images_without_ground_truth_are_skipped_unless_registered() -> None:
    """``TIDERun._run`` loops over ``gt.images``: a detection on an image the ground truth
    never names is dropped (no Bkg error, no false positive); ``add_image`` (``images=``)
    makes it count."""
    det = {"image_id": [1, 2], "category_id": [1, 1], "score": [0.5, 0.9]}
    det |= {"x": [0.0, 0.0], "y": [0.0, 0.0], "w": [10.0, 10.0], "h": [10.0, 10.0]}
    dropped = tide_errors(det, one_box())
    assert dropped.ap == 100 and dropped.counts["Bkg"] == 0
    counted = tide_errors(det, one_box(), images=[2])
    assert counted.ap == 50 and counted.counts["Bkg"] == 1
    assert_equal(counted, *reference(det, one_box(), images=[2]))


def test_crowd_region_of_category_minus_one_ignores_every_class() -> None:
    det = {"image_id": [1, 1], "category_id": [1, 3], "score": [0.9, 0.8]}
    det |= {"x": [0.0, 60.0], "y": [0.0, 60.0], "w": [10.0, 5.0], "h": [10.0, 5.0]}
    gt = {"image_id": [1, 1], "category_id": [1, -1], "iscrowd": [0, 1]}
    gt |= {"x": [0.0, 50.0], "y": [0.0, 50.0], "w": [10.0, 30.0], "h": [10.0, 30.0]}
    got = tide_errors(det, gt)
    assert got.ap == 100 and list(got.per_category) == [1]  # class 3's box is ignored
    assert_equal(got, *reference(det, gt))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"w": [-1.0]}, "w at row 0"),
        ({"x": [float("nan")]}, "x at row 0"),
        ({"iscrowd": [2]}, "iscrowd"),
        ({"h": [1.0, 2.0]}, "different lengths"),
    ],
)
def test_bad_ground_truth_is_refused(change: dict[str, list[Any]], message: str) -> None:
    det = {"image_id": [1], "category_id": [1], "score": [0.5]}
    det |= {"x": [0.0], "y": [0.0], "w": [10.0], "h": [10.0]}
    with pytest.raises(InvalidInput, match=message):
        tide_errors(det, one_box() | change)


def test_missing_column_and_nothing_to_average_are_refused() -> None:
    with pytest.raises(InvalidInput, match="missing column"):
        tide_errors({"image_id": [1]}, one_box())
    empty = {k: [] for k in ("image_id", "category_id", "score", "x", "y", "w", "h")}
    with pytest.raises(InvalidInput, match="no ground truth"):
        tide_errors(empty, one_box() | {"iscrowd": [1]})
    with pytest.raises(InvalidInput, match="max_dets"):
        tide_errors(empty, one_box(), max_dets=0)
