"""PASCAL VOC detection AP as its two reference codes compute it (NumPy reference, no I/O).

- ``voc_eval``: rbgirshick/py-faster-rcnn ``lib/datasets/voc_eval.py`` @
  45e0da9a246fab5fd86e8c96dc351be7f145499f; from d66cc2bf on it divides ``prec = tp /
  np.maximum(tp + fp, np.finfo(np.float64).eps)`` (``eps_precision=True``).
- ``vocevaldet``: ``VOCcode/VOCevaldet.m`` of npinto/VOCdevkit's VOC2007 devkit @
  2b8c01c3ec2c78bb854fa528d2142450a476de3b (11-point AP), VOC2010 @
  0ac38d1ae3f8c5cc46d811a5283d17ba902c462c and VOC2011 @
  89f2ff3df5ab5b912b10b845f7458b4940fedb26 (``VOCap.m``); the matching is the same in all.

They differ in the overlap test, ``ovmax > ovthresh`` vs ``ovmax >= minoverlap`` (an IoU of
exactly 0.5 is a false positive in voc_eval, a true positive in VOCevaldet.m); the order of
equal scores, ``np.argsort(-confidence)`` (not stable) vs MATLAB's stable ``sort``; and the
``ovmax`` of a detection overlapping no object, 0 (``iw``, ``ih`` clipped) vs ``-inf`` (only
``iw>0 & ih>0`` pairs count), a false positive in both. The IoU of overlapping boxes is the
same double in both (same operations in the same order), boxes ``x1, y1, x2, y2`` inclusive.

NumPy's order of ties depends on its version and the CPU: NumPy 2.4 on AVX2 dispatches to
x86-simd-sort, whose ties follow no input order even for 7 elements
(``np.argsort(-np.array([.5, .5, 0, .5, .5, 1, 1]))`` is 6, 5, 0, 1, 4, 3, 2); without it
(``NPY_DISABLE_CPU_FEATURES=X86_V3``, older NumPy) introsort keeps input order up to 16
elements, not beyond. ``ties="numpy"`` sorts the array voc_eval sorts, as voc_eval would here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from evalstore.errors import InvalidInput

__all__ = ["AP_FORMULAS", "REFERENCES", "VOC_TIES", "VocLists", "voc_ap_of_lists", "voc_lists"]

REFERENCES = ("voc_eval", "vocevaldet")
VOC_TIES = ("numpy", "stable")
#: ``voc_ap_07``/``voc_ap``: py-faster-rcnn ``voc_ap(rec, prec, use_07_metric=True/False)``;
#: ``vocevaldet_07``: the VOC2007 devkit's 11-point loop; ``vocap``: the 2010+ ``VOCap.m``.
AP_FORMULAS = ("voc_ap_07", "voc_ap", "vocevaldet_07", "vocap")

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
_BOX = ("x1", "y1", "x2", "y2")
#: MATLAB's ``0:0.1:1`` (MathWorks' colon algorithm: the first half ``k*0.1``, the second
#: ``1 - (10-k)*0.1``), the thresholds of the VOC2007 devkit's ``for t=0:0.1:1``.
_MATLAB_T = np.array([k * 0.1 if 2 * k <= 10 else 1.0 - (10 - k) * 0.1 for k in range(11)])


@dataclass(frozen=True)
class VocLists:
    """The ranked list of every class, class after class, each in its reference's order.

    Attributes:
        classes, n_positives: (G,) the distinct classes, sorted, and each one's ``npos``
            (objects not ``difficult``); list ``g`` is ``classes[g]``.
        group: (M,) index into ``classes`` of each row.
        row: (M,) the detection's row in the input; -1 for a missed object (``missed=True``).
        gt_row: (M,) the row of the object (``jmax``) the detection's overlap passes the
            threshold with, else -1; a missed object's own row.
        score, label: (M,) the score (``-inf`` for a missed object: not retrieved), and +1
            true positive, -1 false positive, 0 neither (the object is difficult).
        seq: (M,) rank in the list, 1, 2, ...; missed objects last, in ground-truth order.
        iou: (M,) the reference's ``ovmax`` (``-inf`` where it stays so; NaN if missed).
    """

    classes: np.ndarray
    n_positives: IntArray
    group: IntArray
    row: IntArray
    gt_row: IntArray
    score: FloatArray
    label: npt.NDArray[np.int8]
    seq: IntArray
    iou: FloatArray


def _column(table: Mapping[str, Any], name: str, what: str, n: int | None) -> np.ndarray:
    try:
        col = np.asarray(table[name])
    except KeyError:
        raise InvalidInput(f"{what}: no column {name!r}") from None
    if col.ndim != 1 or (n is not None and col.shape[0] != n):
        raise InvalidInput(f"{what}: column {name!r} must be 1-D with one value per row")
    return col


def _floats(table: Mapping[str, Any], name: str, what: str, n: int) -> FloatArray:
    col = _column(table, name, what, n)
    if col.dtype.kind not in "iuf":
        raise InvalidInput(f"{what}: column {name!r} must hold numbers, got dtype {col.dtype}")
    out = col.astype(np.float64)
    bad = ~np.isfinite(out)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InvalidInput(f"{what}: row {i}: {name} is {out[i]}; it must be finite")
    return out


def _boxes(table: Mapping[str, Any], what: str, n: int) -> FloatArray:
    box = np.stack([_floats(table, c, what, n) for c in _BOX], axis=1)
    bad = (box[:, 2] < box[:, 0]) | (box[:, 3] < box[:, 1])
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InvalidInput(f"{what}: row {i}: the box {box[i].tolist()} has x2 < x1 or y2 < y1")
    return box


def _difficult(table: Mapping[str, Any]) -> npt.NDArray[np.bool_]:
    col = _column(table, "difficult", "ground truth", len(np.asarray(table["image_id"])))
    if col.dtype.kind not in "biuf" or not np.isin(col, (0, 1)).all():
        raise InvalidInput("ground truth: column 'difficult' must hold 0/1 or booleans")
    return col.astype(bool)


def _image_codes(
    d_img: np.ndarray, g_img: np.ndarray, images: npt.ArrayLike | None
) -> tuple[IntArray, IntArray, np.int64]:
    """Each row's image code and the number of images; an image outside ``images`` (the
    devkit's 'unrecognized image') or listed twice there ('multiple image') is refused."""
    image_set = np.zeros(0, dtype=d_img.dtype) if images is None else np.asarray(images)
    names, (s_code, d_code, g_code) = _codes(image_set, d_img, g_img, what="image ids")
    if images is not None:
        if np.unique(s_code).size != s_code.size:
            raise InvalidInput(
                "images: an image id is listed twice (the devkit's 'multiple image')"
            )
        in_set = np.zeros(names.size, dtype=bool)
        in_set[s_code] = True
        for col, what in ((d_code, "detections"), (g_code, "ground truth")):
            out = ~in_set[col]
            if out.any():
                i = int(np.flatnonzero(out)[0])
                raise InvalidInput(f'{what}: row {i}: unrecognized image "{names[col[i]]}"')
    return d_code, g_code, np.int64(names.size)


def _codes(*columns: np.ndarray, what: str) -> tuple[np.ndarray, list[IntArray]]:
    """The sorted distinct values of the columns together and each column's codes."""
    parts = [c for c in columns if c.size] or [np.zeros(0, dtype=np.int64)]
    try:
        uniq, inv = np.unique(np.concatenate(parts), return_inverse=True)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{what} of detections and ground truth do not compare: {exc}") from None
    inv = inv.astype(np.int64).reshape(-1)
    cuts = np.cumsum([len(c) for c in columns])[:-1]
    return uniq, list(np.split(inv, cuts))


def _area(b: FloatArray) -> FloatArray:
    return (b[:, 2] - b[:, 0] + 1.0) * (b[:, 3] - b[:, 1] + 1.0)


def _overlaps(
    det: FloatArray, gt: FloatArray, clip: bool
) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
    """The IoU of each (detection, object) pair, as voc_eval (``clip``: ``iw = np.maximum(ixmax
    - ixmin + 1., 0.)``..., every pair counts) or VOCevaldet.m (only ``iw>0 & ih>0``) has it."""
    iw = np.minimum(gt[:, 2], det[:, 2]) - np.maximum(gt[:, 0], det[:, 0]) + 1.0
    ih = np.minimum(gt[:, 3], det[:, 3]) - np.maximum(gt[:, 1], det[:, 1]) + 1.0
    counts = np.ones(iw.shape, dtype=bool) if clip else (iw > 0) & (ih > 0)
    if clip:
        iw, ih = np.maximum(iw, 0.0), np.maximum(ih, 0.0)
    inters = iw * ih
    uni = _area(det) + _area(gt) - inters
    with np.errstate(divide="ignore", invalid="ignore"):  # pairs that do not count may be 0/0
        return inters / uni, counts


def _best(
    dkey: IntArray, gkey: IntArray, dbox: FloatArray, gbox: FloatArray, clip: bool
) -> tuple[FloatArray, IntArray]:
    """``ovmax`` and ``jmax`` (a ground-truth row, -1 if none) of every detection: the first
    of its image's objects of its class (in input order) with the greatest overlap, as
    ``np.argmax`` and MATLAB's ``if ov>ovmax`` both take it."""
    gorder = np.argsort(gkey, kind="stable")
    gsorted = gkey[gorder]
    lo = np.searchsorted(gsorted, dkey, side="left")
    cnt = np.searchsorted(gsorted, dkey, side="right") - lo
    ovmax, jmax = np.full(dkey.size, -np.inf), np.full(dkey.size, -1, dtype=np.int64)
    if not cnt.any():
        return ovmax, jmax
    pair_det, start = np.repeat(np.arange(dkey.size), cnt), np.cumsum(cnt) - cnt
    pair_gt = gorder[np.arange(cnt.sum()) - np.repeat(start, cnt) + np.repeat(lo, cnt)]
    ov, counts = _overlaps(dbox[pair_det], gbox[pair_gt], clip)
    ov = np.where(counts, ov, -np.inf)
    ovmax[cnt > 0] = np.maximum.reduceat(ov, start[cnt > 0])
    top = np.flatnonzero((ov == ovmax[pair_det]) & (ov > -np.inf))
    first_det, first = np.unique(pair_det[top], return_index=True)
    jmax[first_det] = pair_gt[top[first]]
    return ovmax, jmax


def voc_lists(
    detections: Mapping[str, Any],
    ground_truth: Mapping[str, Any],
    *,
    reference: str,
    ties: str | None = None,
    images: npt.ArrayLike | None = None,
    ovthresh: float = 0.5,
    missed: bool = False,
) -> VocLists:
    """Each class's ranked list as ``voc_eval`` or ``VOCevaldet.m`` scores it.

    Args:
        detections: columns ``image_id``, ``class``, ``score``, ``x1``, ``y1``, ``x2``, ``y2``
            (anything indexable by name: a dict of arrays, a DataFrame), rows in file order.
        ground_truth: columns ``image_id``, ``class``, ``x1``..``y2``, ``difficult``, each
            image's objects in annotation order (the order ties of overlap are broken in).
        reference: ``"voc_eval"`` (``ovmax > ovthresh``) or ``"vocevaldet"`` (``>=``).
        ties: ``"numpy"`` (voc_eval's default) or ``"stable"`` (VOCevaldet.m's).
        images: the image set (the ``imagesetfile``); default every image of either table.
        ovthresh: voc_eval's ``ovthresh``, the devkit's ``VOCopts.minoverlap``.
        missed: add each unmatched non-difficult object as a row not retrieved.

    Raises:
        InvalidInput: a missing or malformed column, a non-finite number, a box with x2 < x1
            or y2 < y1, an image not in ``images`` or listed twice, unknown reference or ties.

    A detection on an image with no object of its class is a false positive; the second
    detection of one object too; the one of a difficult object is 0:

    >>> det = {"image_id": ["a", "a", "a", "b"], "class": ["cat"] * 4,
    ...        "score": [0.9, 0.8, 0.7, 0.6], "x1": [0, 0, 50, 0], "y1": [0, 0, 50, 0],
    ...        "x2": [9, 9, 59, 9], "y2": [9, 9, 59, 9]}
    >>> gt = {"image_id": ["a", "a"], "class": ["cat", "cat"], "x1": [0, 50],
    ...       "y1": [0, 50], "x2": [9, 59], "y2": [9, 59], "difficult": [0, 1]}
    >>> lists = voc_lists(det, gt, reference="voc_eval")
    >>> lists.label.tolist(), lists.seq.tolist(), lists.n_positives.tolist()
    ([1, -1, 0, -1], [1, 2, 3, 4], [1])
    """
    if reference not in REFERENCES:
        raise InvalidInput(f"unknown reference {reference!r}; expected one of {REFERENCES}")
    ties = ties if ties is not None else ("numpy" if reference == "voc_eval" else "stable")
    if ties not in VOC_TIES:
        raise InvalidInput(f"unknown ties {ties!r}; expected one of {VOC_TIES}")
    d_img = _column(detections, "image_id", "detections", None)
    d_cls = _column(detections, "class", "detections", d_img.size)
    score = _floats(detections, "score", "detections", d_img.size)
    dbox = _boxes(detections, "detections", d_img.size)
    g_img = _column(ground_truth, "image_id", "ground truth", None)
    g_cls = _column(ground_truth, "class", "ground truth", g_img.size)
    gbox, difficult = _boxes(ground_truth, "ground truth", g_img.size), _difficult(ground_truth)
    d_code, g_code, n_img = _image_codes(d_img, g_img, images)
    classes, (d_c, g_c) = _codes(d_cls, g_cls, what="classes")
    ovmax, jmax = _best(
        d_c * n_img + d_code, g_c * n_img + g_code, dbox, gbox, reference == "voc_eval"
    )

    # each class's detections in file order, sorted as the reference sorts them
    by_class = np.argsort(d_c, kind="stable")
    bounds = np.searchsorted(d_c[by_class], np.arange(classes.size + 1))
    n = d_img.size
    order, seq = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    for g in range(classes.size):
        rows = by_class[bounds[g] : bounds[g + 1]]
        confidence = score[rows]
        if ties == "numpy":
            sorted_ind = np.argsort(-confidence)  # voc_eval: sorted_ind = np.argsort(-confidence)
        else:
            sorted_ind = np.argsort(-confidence, kind="stable")  # MATLAB [sc,si]=sort(-confidence)
        order[bounds[g] : bounds[g + 1]] = rows[sorted_ind]
        seq[bounds[g] : bounds[g + 1]] = np.arange(1, rows.size + 1)

    ov, j = ovmax[order], jmax[order]
    passes = (ov > ovthresh) if reference == "voc_eval" else (ov >= ovthresh)
    label = np.full(n, -1, dtype=np.int8)
    hard = np.zeros(n, dtype=bool)
    hard[passes] = difficult[j[passes]]
    label[hard] = 0
    easy = np.flatnonzero(passes & ~hard)
    found, first = np.unique(j[easy], return_index=True)  # the first detection of an object
    label[easy[first]] = 1
    gt_row = np.where(passes, j, -1)

    n_pos = np.bincount(g_c[~difficult], minlength=classes.size).astype(np.int64)
    out = VocLists(
        classes=classes,
        n_positives=n_pos,
        group=d_c[order],
        row=order,
        gt_row=gt_row,
        score=score[order],
        label=label,
        seq=seq,
        iou=ov,
    )
    return _with_missed(out, g_c, difficult, found) if missed else out


def _with_missed(
    lists: VocLists, g_c: IntArray, difficult: npt.NDArray[np.bool_], found: IntArray
) -> VocLists:
    """``lists`` and, after each class's detections, its objects no detection found."""
    seen = np.zeros(g_c.size, dtype=bool)
    seen[found] = True
    miss = np.flatnonzero(~difficult & ~seen)  # in ground-truth order
    group = np.concatenate((lists.group, g_c[miss]))
    k = np.argsort(group, kind="stable")

    def cat(old: np.ndarray, new: np.ndarray) -> np.ndarray:
        return np.concatenate((old, new.astype(old.dtype)))[k]

    return VocLists(
        classes=lists.classes,
        n_positives=lists.n_positives,
        group=group[k],
        row=cat(lists.row, np.full(miss.size, -1)),
        gt_row=cat(lists.gt_row, miss),
        score=cat(lists.score, np.full(miss.size, -np.inf)),
        label=cat(lists.label, np.ones(miss.size)),
        seq=np.arange(k.size) - np.searchsorted(group[k], group[k]) + 1,
        iou=cat(lists.iou, np.full(miss.size, np.nan)),
    )


def _rec_prec(
    label: npt.NDArray[np.int8], npos: int, eps_precision: bool
) -> tuple[FloatArray, FloatArray]:
    """voc_eval's (and VOCevaldet.m's) ``rec = tp / float(npos); prec = tp / (tp + fp)``."""
    tp = np.cumsum((label == 1).astype(np.float64))
    fp = np.cumsum((label == -1).astype(np.float64))
    with np.errstate(divide="ignore", invalid="ignore"):
        rec = tp / float(npos)
        if eps_precision:
            prec = tp / np.maximum(tp + fp, np.finfo(np.float64).eps)
        else:
            prec = tp / (tp + fp)
    return rec, prec


def _ap(rec: FloatArray, prec: FloatArray, formula: str) -> float:
    with np.errstate(invalid="ignore"):
        if formula == "voc_ap_07":  # voc_ap(rec, prec, use_07_metric=True), verbatim
            ap = 0.0
            for t in np.arange(0.0, 1.1, 0.1):
                if np.sum(rec >= t) == 0:  # noqa: SIM108 (verbatim)
                    p = 0.0
                else:
                    p = np.max(prec[rec >= t])  # NaN propagates
                ap = ap + p / 11.0
            return float(ap)
        if formula == "vocevaldet_07":  # for t=0:0.1:1; p=max(prec(rec>=t)); ...; ap=ap+p/11;
            ap = 0.0
            for t in _MATLAB_T:
                sel = prec[rec >= t]
                if sel.size == 0:  # if isempty(p), p=0
                    p = 0.0
                else:  # MATLAB's max ignores NaN, and is NaN when every element is
                    p = np.nan if np.isnan(sel).all() else float(np.nanmax(sel))
                ap = ap + p / 11
            return float(ap)
        mrec = np.concatenate(([0.0], rec, [1.0]))
        mpre = np.concatenate(([0.0], prec, [0.0]))
        # voc_ap's `for i ...: mpre[i - 1] = np.maximum(mpre[i - 1], mpre[i])` is this running
        # max from the end; VOCap.m's max(mpre(i),mpre(i+1)) ignores NaN, as np.fmax does
        step = np.maximum if formula == "voc_ap" else np.fmax
        mpre = step.accumulate(mpre[::-1])[::-1]
        i = np.where(mrec[1:] != mrec[:-1])[0]
        return float(np.sum((mrec[i + 1] - mrec[i]) * mpre[i + 1]))


def voc_ap_of_lists(lists: VocLists, *, formula: str, eps_precision: bool = False) -> FloatArray:
    """The AP of every class of :func:`voc_lists` by one reference's formula (:data:`AP_FORMULAS`).

    rec/prec run over the class's detections in ``seq`` order, a 0 row repeating the previous
    point (``prec = 0/0 = NaN`` ahead of any tp or fp); ``npos = 0`` gives ``rec = NaN``. Then:

    ``voc_ap_07``: ``p = np.max(prec[rec >= t])`` (0 if empty) for ``t in np.arange(0., 1.1,
    0.1)``, NaN propagating (a class whose best detection is a difficult object's gets NaN
    unless ``eps_precision``); ``voc_ap``: the area under the precision envelope;
    ``vocevaldet_07``: ``for t=0:0.1:1``, MATLAB's ``max`` ignoring NaN; ``vocap``: ``VOCap.m``.

    A class without objects gets 0 from the 11-point formulas (no recall reaches ``t``), NaN
    from the others if it has a detection, 0 if it has none.

    >>> det = {"image_id": [0, 0, 1], "class": [7, 7, 7], "score": [0.9, 0.8, 0.7],
    ...        "x1": [0, 30, 0], "y1": [0, 30, 0], "x2": [9, 39, 9], "y2": [9, 39, 9]}
    >>> gt = {"image_id": [0, 1], "class": [7, 7], "x1": [0, 0], "y1": [0, 0],
    ...       "x2": [9, 9], "y2": [9, 19], "difficult": [0, 0]}
    >>> lists = voc_lists(det, gt, reference="voc_eval")  # IoU 100/200 = 0.5 on image 1
    >>> lists.label.tolist(), voc_ap_of_lists(lists, formula="voc_ap").tolist()
    ([1, -1, -1], [0.5])
    >>> lists = voc_lists(det, gt, reference="vocevaldet")  # 0.5 >= 0.5: (1/2)*1 + (1/2)*2/3
    >>> lists.label.tolist(), voc_ap_of_lists(lists, formula="vocap").tolist()
    ([1, -1, 1], [0.8333333333333333])
    """
    if formula not in AP_FORMULAS:
        raise InvalidInput(f"unknown AP formula {formula!r}; expected one of {AP_FORMULAS}")
    bounds = np.searchsorted(lists.group, np.arange(lists.classes.size + 1))
    out = np.empty(lists.classes.size)
    for g in range(lists.classes.size):
        rows = slice(bounds[g], bounds[g + 1])
        label = lists.label[rows][lists.row[rows] >= 0]  # the detections, in seq order
        rec, prec = _rec_prec(label, int(lists.n_positives[g]), eps_precision)
        out[g] = _ap(rec, prec, formula)
    return out
