"""TIDE's breakdown of detection errors for boxes (NumPy reference, no I/O).

Bolya et al., "TIDE: A General Toolbox for Identifying Object Detection Errors", ECCV 2020; the
PyPI package ``tidecv`` 1.0.1, transcribed from dbolya/tide @
49a5d2a4aeb56795e93a3ed7cc7e6d25757bb4c1 (the package's files are that commit's, with CRLF line
ends):

- ``tidecv/quantify.py``: ``TIDEExample._run`` (greedy matching per image), ``TIDERun._eval_image``
  (the error tests, in their order), ``TIDERun.fix_errors``, ``fix_main_errors`` and
  ``fix_special_errors``;
- ``tidecv/errors/main_errors.py`` and ``error.py``: what fixing each error does, and
  ``BestGTMatch`` (one ground truth is fixed by its best-scoring Cls or Loc error only);
- ``tidecv/ap.py``: ``APDataObject.get_ap`` (101-point AP over the precision envelope, in
  percent) and ``ClassedAPDataObject.get_mAP`` (the mean over the classes that have a ground
  truth or a kept detection);
- the box IoU is pycocotools' ``maskUtils.iou`` (``common/maskApi.c`` ``bbIou``).

Conventions kept from tidecv, as its code has them (``docs``-worthy, tested against it):

- AP and dAP are in percent (0..100), as tidecv prints them.
- A detection matches the unused ground truth of its class with the highest IoU, if
  ``IoU >= pos_threshold`` (inclusive, unlike COCO's ``>``); detections are taken by score,
  highest first (ties in input order), and only the first ``max_dets`` of each image, all
  classes together.
- A crowd region (``iscrowd`` 1) is an ignore region of its class (category -1: every class):
  an unmatched detection whose intersection over its own area is ``> pos_threshold`` is
  ignored. It still gets an error (the tests below run on every unmatched detection).
- Only images with a ground-truth row (or listed in ``images``) are evaluated: detections on
  other images are dropped, as ``TIDERun._run`` iterates over ``gt.images``.
- The errors of an unmatched detection, tested in this order: no ground truth in the image ->
  Bkg; same-class IoU in ``[bg, pos]`` -> Loc; other-class IoU ``>= pos`` -> Cls; IoU with a
  used same-class ground truth ``>= pos`` -> Dupe; every IoU ``<= bg`` -> Bkg; else Both. An
  unmatched ground truth that no Cls or Loc error points at is a Miss.
- A main error's dAP is ``max(mAP(fixed) - mAP, 0)``, each type fixed alone; the special
  errors' (FalsePos, FalseNeg) are not clipped. Fixing re-pushes the points in tidecv's order
  (errors first, then the true positives), which matters where scores tie.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from evalstore.core.detection_tide_ap import (
    TideAPData,
    TideError,
    best_match,
    fix_errors,
    fixed_point,
    tide_ap,
    tide_box_iou,
)
from evalstore.errors import InvalidInput

__all__ = [
    "MAIN_ERRORS",
    "SPECIAL_ERRORS",
    "TideCategory",
    "TideResult",
    "tide_ap",
    "tide_box_iou",
    "tide_errors",
]

#: ``TIDE._error_types``' short names, in its order
MAIN_ERRORS = ("Cls", "Loc", "Both", "Dupe", "Bkg", "Miss")
#: ``TIDE._special_error_types``' short names
SPECIAL_ERRORS = ("FalsePos", "FalseNeg")

FloatArray = npt.NDArray[np.float64]
Columns = Mapping[str, npt.ArrayLike]


@dataclass(frozen=True)
class TideCategory:
    """One category: its AP (``get_ap`` of its class) and, per error type, the AP of that class
    with the errors of that type fixed minus its AP (main errors clipped at 0, as the run's)."""

    ap: float
    main: dict[str, float]
    special: dict[str, float]


@dataclass(frozen=True)
class TideResult:
    """One run: ``ap`` is tidecv's ``run.ap`` (mAP at ``pos_threshold``, percent), ``main`` and
    ``special`` its ``get_main_errors()`` / ``get_special_errors()``, ``counts`` its
    ``count_errors()`` (by short name), ``per_category`` every class of its AP data."""

    ap: float
    main: dict[str, float]
    special: dict[str, float]
    counts: dict[str, int]
    per_category: dict[Hashable, TideCategory]


def tide_errors(
    detections: Columns,
    ground_truth: Columns,
    *,
    pos_threshold: float = 0.5,
    background_threshold: float = 0.1,
    max_dets: int = 100,
    images: Iterable[Hashable] = (),
) -> TideResult:
    """TIDE for boxes: ``TIDE(pos_threshold, background_threshold).evaluate(gt, preds,
    mode=TIDE.BOX)`` with ``gt = Data(..., max_dets)``, then ``run.ap``, the main and special
    errors' dAP and per class the same from ``fix_errors``.

    ``detections``: columns ``image_id, category_id, score, x, y, w, h``; ``ground_truth``:
    ``image_id, category_id, x, y, w, h`` and optionally ``iscrowd`` (rows with 1 are
    ``add_ignore_region``). Row order is the order of ``add_detection`` / ``add_ground_truth``
    (it breaks ties). ``images``: image ids registered first (``add_image``), evaluated even
    without ground truth.

    Raises:
        InvalidInput: a missing column, columns of different lengths, a non-finite number or a
            negative side; no class to average; a Cls/Loc ground truth whose candidates all
            score <= -1 (tidecv fails there: ``best_id`` is never set).

    A true positive, a duplicate of it, a box in the wrong class (Cls) and a missed ground truth:

    >>> r = tide_errors(
    ...     {"image_id": [1, 1, 1], "category_id": [1, 1, 2], "score": [0.9, 0.8, 0.7],
    ...      "x": [0, 1, 20], "y": [0, 1, 20], "w": [10, 10, 10], "h": [10, 10, 10]},
    ...     {"image_id": [1, 1, 1], "category_id": [1, 1, 1],
    ...      "x": [0, 20, 40], "y": [0, 20, 40], "w": [10, 10, 10], "h": [10, 10, 10]})
    >>> round(r.ap, 2), r.counts["Cls"], r.counts["Dupe"], r.counts["Miss"]
    (16.83, 1, 1, 1)

    Fixing the Cls error moves its box to class 1 (a true positive at 0.7) and leaves class 2
    with neither a point nor a positive, so the mean is over class 1 alone; removing the
    duplicate changes no precision that the envelope keeps; fixing the Miss leaves 2 positives:

    >>> {k: round(v, 2) for k, v in r.main.items()}
    {'Cls': 38.61, 'Loc': 0.0, 'Both': 0.0, 'Dupe': 0.0, 'Bkg': 0.0, 'Miss': 8.42}
    >>> {k: round(v, 2) for k, v in r.special.items()}
    {'FalsePos': 0.0, 'FalseNeg': 33.17}
    >>> r.per_category[2].ap, round(r.per_category[1].main["Cls"], 2)
    (0.0, 21.78)
    """
    if max_dets < 1:
        raise InvalidInput(f"TIDE: max_dets must be >= 1, got {max_dets}")
    det = _columns(detections, "detections", ("image_id", "category_id", "score"))
    gt = _columns(ground_truth, "ground_truth", ("image_id", "category_id"))
    n_gt = len(gt["x"])
    crowd = np.asarray(ground_truth.get("iscrowd", np.zeros(n_gt)), dtype=np.float64).reshape(-1)
    if crowd.shape[0] != n_gt or not np.isin(crowd, (0, 1)).all():
        raise InvalidInput(f"ground_truth: iscrowd must be {n_gt} flags 0 or 1")
    ignore = crowd.astype(bool).tolist()
    # Data.images: registration order (add_image first, then each ground truth's image)
    by_image: dict[Hashable, list[int]] = {i: [] for i in images}
    for row, img in enumerate(gt["image_id"]):
        by_image.setdefault(img, []).append(row)
    det_by_image: dict[Hashable, list[int]] = {}
    for row, img in enumerate(det["image_id"]):
        det_by_image.setdefault(img, []).append(row)

    ap_data = TideAPData()
    errors: list[TideError] = []
    best: dict[int, tuple[float, int]] = {}  # gt row -> BestGTMatch's (best_score, best_id)
    false_neg: dict[Hashable, int] = {}  # TIDERun.false_negatives, counted
    for img, rows in by_image.items():
        truths = [r for r in rows if not ignore[r]]
        for r in truths:
            ap_data.add_gt(gt["category_id"][r], 1)
        used_gt: set[int] = set()
        image_errors: list[TideError] = []
        if det_by_image.get(img):
            regions = [r for r in rows if ignore[r]]
            ex = _Example(det, gt, det_by_image[img], truths, regions, pos_threshold, max_dets)
            used_gt = ex.used_gt
            image_errors = ex.errors(ap_data, best, background_threshold)
        usable = {e.fix_gt for e in image_errors if e.kind in ("Cls", "Loc")}
        for r in truths:
            if r not in used_gt:
                c = gt["category_id"][r]
                false_neg[c] = false_neg.get(c, 0) + 1
                if r not in usable:
                    image_errors.append(TideError("Miss", -1, None, c, r))
        errors += image_errors
    for e in errors:
        fixed_point(e, best)
    return _summary(ap_data, errors, false_neg)


class _Example:
    """``TIDEExample._run``: one image's detections sorted by score (stable), cut to
    ``max_dets``; each matched greedily to the unused ground truth of its class with the highest
    IoU (the first of equal ones) if ``>= pos``; the unmatched ones in a region of their class
    (or of class -1) with intersection over their area ``> pos`` ignored (``used`` None)."""

    def __init__(
        self,
        det: dict[str, list],
        gt: dict[str, list],
        preds: list[int],
        truths: list[int],
        regions: list[int],
        pos: float,
        max_dets: int,
    ) -> None:
        scores = det["score"]
        self.det, self.gt, self.truths, self.pos = det, gt, truths, pos
        self.preds = sorted(preds, key=lambda r: -scores[r])[:max_dets]
        d_box = _boxes(det, self.preds)
        self.iou = tide_box_iou(d_box, _boxes(gt, truths))
        pc = np.array([det["category_id"][r] for r in self.preds], dtype=object)
        gc = np.array([gt["category_id"][r] for r in truths], dtype=object)
        self.same = (pc[:, None] == gc[None, :]).astype(bool)
        self.cls_iou = self.iou * self.same
        self.used: list[bool | None] = [False] * len(self.preds)
        self.used_gt: set[int] = set()
        if truths:
            buffer = self.cls_iou.copy()
            for p in range(len(self.preds)):
                j = int(np.argmax(buffer[p, :]))
                if buffer[p, j] >= pos:
                    self.used[p] = True
                    self.used_gt.add(truths[j])
                    buffer[:, j] = 0
        for r in regions:
            region_iou = tide_box_iou(d_box, _boxes(gt, [r]), crowd=True)[:, 0]
            region_cls = gt["category_id"][r]
            for p, row in enumerate(self.preds):
                if (
                    not self.used[p]
                    and region_iou[p] > pos
                    and (region_cls == det["category_id"][row] or region_cls == -1)
                ):
                    self.used[p] = None

    def errors(
        self, ap_data: TideAPData, best: dict[int, tuple[float, int]], bg: float
    ) -> list[TideError]:
        """``TIDERun._eval_image``'s loop: push each kept detection, then test each unmatched
        (or ignored) one for its error, in TIDE's order."""
        truths, pos, scores = self.truths, self.pos, self.det["score"]
        iou, cls_iou, same = self.iou, self.cls_iou, self.same
        gt_used = np.array([r in self.used_gt for r in truths])[None, :]
        noncls_iou = iou * ~same
        used_cls = gt_used * iou * same
        out: list[TideError] = []
        for p, row in enumerate(self.preds):
            c, used = self.det["category_id"][row], self.used[p]
            if used is not None:
                ap_data.push(c, (scores[row], used))
            if used:
                continue
            original = None if used is None else (c, (scores[row], False))
            if not truths:
                out.append(TideError("Bkg", row, original))
                continue
            j = int(np.argmax(cls_iou[p, :]))
            if bg <= cls_iou[p, j] <= pos:
                e = TideError("Loc", row, original, c, truths[j])
                out.append(best_match(e, scores[row], self.used_gt, best))
                continue
            j = int(np.argmax(noncls_iou[p, :]))
            if noncls_iou[p, j] >= pos:
                e = TideError("Cls", row, original, self.gt["category_id"][truths[j]], truths[j])
                out.append(best_match(e, scores[row], self.used_gt, best))
                continue
            j = int(np.argmax(used_cls[p, :]))
            if used_cls[p, j] >= pos:
                out.append(TideError("Dupe", row, original))
                continue
            j = int(np.argmax(iou[p, :]))
            out.append(TideError("Bkg" if iou[p, j] <= bg else "Both", row, original))
        return out


def _summary(
    ap_data: TideAPData, errors: list[TideError], false_neg: dict[Hashable, int]
) -> TideResult:
    """``run.ap``, ``fix_main_errors()`` (each type alone, ``max(new_ap - ap, 0)``),
    ``fix_special_errors()`` (not clipped), ``count_errors()``, and the same per class."""
    run_ap = ap_data.mean_ap()
    fixed = {k: fix_errors(errors, ap_data, kind=k) for k in MAIN_ERRORS}
    special = {
        "FalsePos": fix_errors(errors, ap_data, fp_transform=True),
        "FalseNeg": fix_errors(errors, ap_data, false_neg=false_neg),
    }
    per_category = {}
    for c in ap_data.points:
        ap_c = ap_data.ap(c)
        per_category[c] = TideCategory(
            ap=ap_c,
            main={k: max(v.ap(c) - ap_c, 0) for k, v in fixed.items()},
            special={k: v.ap(c) - ap_c for k, v in special.items()},
        )
    return TideResult(
        ap=run_ap,
        main={k: max(v.mean_ap() - run_ap, 0) for k, v in fixed.items()},
        special={k: v.mean_ap() - run_ap for k, v in special.items()},
        counts={k: sum(e.kind == k for e in errors) for k in MAIN_ERRORS},
        per_category=per_category,
    )


def _boxes(cols: dict[str, list], rows: list[int]) -> FloatArray:
    return np.array([[cols[c][r] for c in "xywh"] for r in rows], dtype=np.float64).reshape(-1, 4)


def _columns(columns: Columns, what: str, ids: tuple[str, ...]) -> dict[str, list]:
    """The columns as lists of Python values; numbers finite, sides >= 0."""
    names = (*ids, "x", "y", "w", "h")
    missing = [c for c in names if c not in columns]
    if missing:
        raise InvalidInput(f"{what}: missing column(s) {', '.join(missing)}")
    out: dict[str, list] = {}
    for c in names:
        v = np.asarray(columns[c]).reshape(-1)
        if c in ("score", "x", "y", "w", "h"):
            try:
                v = v.astype(np.float64)
            except (TypeError, ValueError):
                raise InvalidInput(f"{what}: column {c} must be numbers") from None
            bad = ~np.isfinite(v) | ((v < 0) if c in ("w", "h") else False)
            if bad.any():
                raise InvalidInput(
                    f"{what}: {c} at row {int(np.flatnonzero(bad)[0])} is not finite or negative"
                )
        out[c] = v.tolist()
    lengths = {c: len(v) for c, v in out.items()}
    if len(set(lengths.values())) > 1:
        raise InvalidInput(f"{what}: columns of different lengths {lengths}")
    return out
