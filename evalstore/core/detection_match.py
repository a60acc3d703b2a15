"""COCO's greedy matching of detections to ground truth, vectorised over images, categories,
IoU thresholds and area ranges.

pycocotools' ``COCOeval.evaluateImg`` (cocodataset/cocoapi, PythonAPI/pycocotools/cocoeval.py)
matches the detections of one (image, category) one at a time, best score first, each to the
available ground-truth box of largest IoU. The loop is sequential within an (image, category),
but the k-th detection of every (image, category) can be matched at once: this module loops over
the detection's rank (at most ``max_det``) and handles every group, threshold and the
candidates of each detection as arrays. The rules are evaluateImg's:

- a detection may match a box with IoU >= ``min(t, 1 - 1e-10)``;
- a box already matched at that threshold is not available, unless it is a crowd region
  (``iscrowd``), which any number of detections may match;
- boxes are scanned non-ignored first (``np.argsort(gtIg, kind='mergesort')``), keeping the
  largest IoU, a later box on equal IoU; once a non-ignored box is kept, no ignored box is
  considered (the ``break``); so the match is the best available non-ignored box, else the
  best available ignored one;
- a box is ignored when it is a crowd region or its ``area`` is outside the area range (its
  ``ignore`` field is overwritten by ``iscrowd`` in ``_prepare``);
- a detection matched to an ignored box is ignored; an unmatched detection whose area is outside
  the range is ignored.

The plain loop it must equal is pycocotools itself (tests/conformance/test_coco_match.py runs it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from evalstore.core.detection import paired_iou

__all__ = ["CocoMatches", "box_pairs", "coco_match", "group_ranks"]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class CocoMatches:
    """The outcome of every kept detection at every (area range, IoU threshold).

    ``label[a, t, d]``: +1 matched to a non-ignored box, -1 unmatched (a false positive),
    0 ignored; ``gt[a, t, d]``: the index of the matched box, -1 when unmatched;
    ``gt_ignored[a, g]``: whether box ``g`` is ignored under area range ``a``.
    """

    label: npt.NDArray[np.int8]
    gt: I64
    gt_ignored: B


def group_ranks(group: I64, score: F64, det_id: I64) -> I64:
    """Each detection's rank in its group (an image and category), from 0, by descending
    score, equal scores by ``det_id`` (input order): ``evaluateImg``'s
    ``np.argsort(-score, kind='mergesort')`` within the group; ``maxDets`` keeps ``rank < m``.

    >>> group_ranks(np.array([0, 0, 1, 0]), np.array([.5, .9, .1, .5]), np.arange(4)).tolist()
    [1, 0, 0, 2]
    """
    order = np.lexsort((det_id, -score, group))
    starts = np.flatnonzero(np.r_[True, group[order][1:] != group[order][:-1]])
    lengths = np.diff(np.r_[starts, order.size])
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size) - np.repeat(starts, lengths)
    return rank


def box_pairs(
    det_group: I64, det_xywh: F64, gt_group: I64, gt_xywh: F64, gt_crowd: B
) -> tuple[I64, I64, F64]:
    """Every (detection, box) pair of one group and its IoU as pycocotools' ``bbIou``
    (cocoapi common/maskApi.c) computes it (:func:`~evalstore.core.detection.paired_iou`).

    Returns (detection index, box index, IoU) of the pairs with IoU > 0.

    >>> d, g, iou = box_pairs(np.array([0, 0]), np.array([[0., 0, 10, 10], [20., 0, 10, 10]]),
    ...                       np.array([0]), np.array([[5., 0, 10, 10]]), np.array([False]))
    >>> d.tolist(), g.tolist(), iou.tolist()  # 50 / (100 + 100 - 50); the second: no overlap
    ([0], [0], [0.3333333333333333])
    """
    order = np.argsort(gt_group, kind="stable")
    starts = np.searchsorted(gt_group[order], det_group, side="left")
    ends = np.searchsorted(gt_group[order], det_group, side="right")
    counts = ends - starts
    d = np.repeat(np.arange(det_group.size), counts)
    offsets = np.arange(d.size) - np.repeat(np.cumsum(counts) - counts, counts)
    g = order[np.repeat(starts, counts) + offsets]
    iou = paired_iou(det_xywh[d], gt_xywh[g], gt_crowd[g])
    overlap = iou > 0
    return d[overlap], g[overlap], iou[overlap]


def coco_match(
    *,
    det_rank: I64,
    det_area: F64,
    gt_area: F64,
    gt_crowd: B,
    pairs: tuple[I64, I64, F64],
    iou_thresholds: F64,
    area_ranges: F64,
) -> CocoMatches:
    """Match every detection at every IoU threshold and area range, as ``evaluateImg`` does.

    Args:
        det_rank: each detection's rank in its (image, category) by descending score, ties in
            input order (``np.argsort(-score, kind='mergesort')``), counted from 0; give only
            the kept ones (rank < maxDets[-1]).
        det_area: each detection's area (w*h, as ``loadRes`` sets it).
        gt_area: each box's annotated ``area`` (what the area ranges read).
        gt_crowd: each box's ``iscrowd``.
        pairs: (detection, box, IoU) of the pairs within one (image, category) with IoU > 0
            (:func:`box_pairs`).
        iou_thresholds: the thresholds (pycocotools' ``iouThrs``).
        area_ranges: (lo, hi) per area range (``areaRng``).

    >>> m = coco_match(det_rank=np.array([0, 1]), det_area=np.array([100., 100.]),
    ...                gt_area=np.array([100.]), gt_crowd=np.array([False]),
    ...                pairs=(np.array([0, 1]), np.array([0, 0]), np.array([0.9, 0.95])),
    ...                iou_thresholds=np.array([0.5]), area_ranges=np.array([[0., 1e10]]))
    >>> m.label[0, 0].tolist()  # the better-scored detection takes the box; the second is an FP
    [1, -1]
    """
    pd, pg, piou = pairs
    n_det, n_gt = det_rank.size, gt_area.size
    n_thr, n_area = iou_thresholds.size, len(area_ranges)
    thresholds = np.minimum(iou_thresholds, 1 - 1e-10)[:, None]
    label = np.full((n_area, n_thr, n_det), -1, dtype=np.int8)
    matched_gt = np.full((n_area, n_thr, n_det), -1, dtype=np.int64)
    ignored = np.empty((n_area, n_gt), dtype=bool)
    keep = piou >= thresholds.min()
    pd, pg, piou = pd[keep], pg[keep], piou[keep]
    for a, (lo, hi) in enumerate(area_ranges):
        gt_ig = gt_crowd | (gt_area < lo) | (gt_area > hi)
        ignored[a] = gt_ig
        # within a detection's pairs, the best candidate last: non-ignored after ignored,
        # then by IoU, then by the box's place in the ground truth's order (a later box wins)
        order = np.lexsort((pg, piou, ~gt_ig[pg], pd, det_rank[pd]))
        rd, rg, riou = pd[order], pg[order], piou[order]
        rank = det_rank[rd]
        taken = np.zeros((n_thr, n_gt), dtype=bool)
        bounds = np.searchsorted(rank, np.arange(rank.max(initial=-1) + 2))
        for r in range(bounds.size - 1):
            lo_i, hi_i = bounds[r], bounds[r + 1]
            if lo_i == hi_i:
                continue
            d, g, iou = rd[lo_i:hi_i], rg[lo_i:hi_i], riou[lo_i:hi_i]
            eligible = (iou >= thresholds) & (~taken[:, g] | gt_crowd[g])  # (T, k)
            # the last eligible candidate of each detection: a non-ignored one if any (they
            # sort after the ignored), else the best ignored
            starts = np.flatnonzero(np.r_[True, d[1:] != d[:-1]])
            position = np.where(eligible, np.arange(d.size), -1)
            best = np.maximum.reduceat(position, starts, axis=1)  # (T, n detections)
            t_idx, s_idx = np.nonzero(best >= 0)
            chosen = best[t_idx, s_idx]
            det, box = d[chosen], g[chosen]
            taken[t_idx, box] = True
            matched_gt[a, t_idx, det] = box
            label[a, t_idx, det] = np.where(gt_ig[box], 0, 1)
        outside = (det_area < lo) | (det_area > hi)
        label[a][(matched_gt[a] < 0) & outside[None, :]] = 0
    return CocoMatches(label=label, gt=matched_gt, gt_ignored=ignored)
