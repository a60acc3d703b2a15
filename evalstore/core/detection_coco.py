"""COCO's box detection protocol as ranked lists (NumPy reference, no I/O).

pycocotools' ``COCOeval(cocoGt, cocoDt, 'bbox')`` in evalstore's terms: :func:`coco_lists`
transcribes ``_prepare``, ``computeIoU`` and ``evaluateImg`` and returns one row per
(category, area range, IoU threshold, kept detection) with its label; ``coco_accumulate``
(:mod:`evalstore.core.detection_summary`) computes ``eval['precision']`` and ``eval['recall']``
from those rows as ``accumulate`` does, ``coco_summarize`` the 12 numbers of ``summarize()``
and ``coco_summarize_by_category`` the same per category. Source: cocodataset/cocoapi
``PythonAPI/pycocotools/cocoeval.py`` @ 8c9bcc3cf640524c4c20a9c40e89cb6a2f2fa0e9 (see
:mod:`evalstore.core.detection`). Equal to pycocotools 2.0.11 run on the same data
(``tests/conformance/test_coco_det.py``).

The quirks kept, because they are the reference:

- ``ignore`` is overwritten by ``iscrowd``; a crowd region matches by intersection over the
  detection's area and is never consumed; ground truth is sorted ignored-last (mergesort), and a
  detection matched to a regular ground truth stops at the first ignored one (the ``break``);
  a match needs ``IoU >= min(t, 1 - 1e-10)``, and a later ground truth of IoU equal to the best
  so far replaces it (``ious[dind, gind] < iou`` skips only a lower one).
- detections are sorted by ``-score`` with mergesort (input order among equal scores) and cut to
  ``max_dets[-1]`` per image and category; an unmatched detection outside the area range is
  ignored, a matched one is not (its ground truth decides).
- ids as pycocotools holds them: a match to a ground truth whose id is 0 reads as unmatched
  (``dtm == 0``), and a detection id <= 0 does not consume its ground truth (``gtm > 0``);
  ``loadRes`` numbers detections from 1, so only the first can happen with its own files.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from evalstore.core.detection import (
    CocoParams,
    Columns,
    box_iou,
    detection_columns,
    truth_columns,
)

__all__ = [
    "CocoLists",
    "coco_lists",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class CocoLists:
    """The ranked lists of a COCO evaluation: one row per (category, area range, IoU
    threshold, kept detection), sorted by those and ``seq``.

    Attributes:
        params: the parameters, ``img_ids`` and ``cat_ids`` resolved (sorted, distinct).
        category_id, image_id, detection_id: (N,) the ids of each row.
        area_index, iou_index: (N,) index into ``params.area_rng`` and ``params.iou_thrs``.
        score: (N,) float64.
        rank: (N,) 0-based rank of the detection in its image and category (``-score``,
            mergesort); the ``maxDets = m`` list keeps ``rank < m``.
        label: (N,) +1 matched to a non-ignored ground truth, -1 unmatched, 0 ignored
            (``dtIgnore``: matched to an ignored ground truth, or unmatched outside the range).
        seq: (N,) the position in ``accumulate``'s ``np.concatenate([e['dtScores'][0:maxDet]
            for e in E])`` (images in ``img_ids`` order), so that sorting by ``(-score, seq)``
            is its ``np.argsort(-dtScores, kind='mergesort')``.
        npig: (K, A) the non-ignored ground truth of each (category, area range).
        skipped: (K, A) the cells ``accumulate`` skips for an empty ``E`` (no ground truth and
            no detection of the category anywhere); a cell with ``npig == 0`` is skipped too.
    """

    params: CocoParams
    category_id: np.ndarray
    area_index: IntArray
    iou_index: IntArray
    image_id: np.ndarray
    detection_id: np.ndarray
    score: FloatArray
    rank: IntArray
    label: npt.NDArray[np.int8]
    seq: IntArray
    npig: IntArray
    skipped: npt.NDArray[np.bool_]


def _ids(given: tuple[object, ...] | None, *found: np.ndarray) -> np.ndarray:
    """``list(np.unique(p.imgIds))``: sorted, distinct."""
    if given is not None:
        return np.unique(np.asarray(given))
    some = [f for f in found if f.size] or list(found[:1])
    return np.unique(np.concatenate(some))


def _cells(image_id: np.ndarray, category_id: np.ndarray, keep: np.ndarray) -> dict:
    """``self._gts[gt['image_id'], gt['category_id']].append(gt)``: row indices per (image,
    category), in input order."""
    cells: dict[tuple[object, object], list[int]] = {}
    for i in np.flatnonzero(keep).tolist():
        cells.setdefault((image_id[i].item(), category_id[i].item()), []).append(i)
    return cells


def _truthy(ids: np.ndarray, positive: bool) -> npt.NDArray[np.bool_]:
    """How pycocotools' float arrays see ids: ``dtm != 0`` (a gt id) or ``gtm > 0`` (a det id);
    ids that are not numbers are always true."""
    if ids.dtype.kind not in "iufb":
        return np.ones(ids.shape[0], dtype=bool)
    v = ids.astype(np.float64)
    return v > 0 if positive else v != 0


def coco_lists(detections: Columns, ground_truth: Columns, params: CocoParams) -> CocoLists:
    """The rows of ``evaluateImg`` for every category, area range and image (module docstring;
    columns as :func:`~evalstore.core.detection.detection_columns` and
    :func:`~evalstore.core.detection.truth_columns` read them). Rows of images or categories
    outside ``params`` are dropped, as ``getAnnIds`` does. The greedy loop is a plain
    transcription of ``evaluateImg``'s.

    One ground truth and two detections on it: the higher score takes it up to IoU 0.55, the
    other is a false positive; from 0.6 on the first misses and the second (IoU 0.64) takes it:

    >>> gt = {"image_id": [1], "category_id": [1], "id": [1], "x": [0], "y": [0],
    ...       "w": [10], "h": [10], "area": [100], "iscrowd": [0]}
    >>> dt = {"image_id": [1, 1], "category_id": [1, 1], "id": [1, 2], "x": [0, 0],
    ...       "y": [0, 0], "w": [10, 8], "h": [5.6, 8], "score": [0.9, 0.8]}
    >>> rows = coco_lists(dt, gt, CocoParams(area_rng=((0, 1e10),), area_lbl=("all",)))
    >>> rows.label.reshape(10, 2).tolist()[:3]
    [[1, -1], [1, -1], [-1, 1]]
    >>> rows.npig.tolist(), rows.seq[:2].tolist(), rows.rank[:2].tolist()
    ([[1]], [0, 1], [0, 1])
    """
    dt = detection_columns(detections)
    gt = truth_columns(ground_truth)
    img_ids = _ids(params.img_ids, gt["image_id"], dt["image_id"])
    cat_ids = _ids(params.cat_ids, gt["category_id"], dt["category_id"])
    p = replace(params, img_ids=tuple(img_ids.tolist()), cat_ids=tuple(cat_ids.tolist()))
    keep_g = np.isin(gt["image_id"], img_ids) & np.isin(gt["category_id"], cat_ids)
    keep_d = np.isin(dt["image_id"], img_ids) & np.isin(dt["category_id"], cat_ids)
    gts = _cells(gt["image_id"], gt["category_id"], keep_g)
    dts = _cells(dt["image_id"], dt["category_id"], keep_d)
    gt_box = np.stack([gt[c] for c in ("x", "y", "w", "h")], axis=1)
    dt_box = np.stack([dt[c] for c in ("x", "y", "w", "h")], axis=1)
    gt_matched = _truthy(gt["id"], positive=False)  # dtm = gt id: nonzero reads as matched
    dt_consumes = _truthy(dt["id"], positive=True)  # gtm = dt id: > 0 reads as consumed
    thrs = list(p.iou_thrs)
    T, A, K, max_det = len(thrs), len(p.area_rng), len(cat_ids), p.max_dets[-1]
    npig = np.zeros((K, A), dtype=np.int64)
    skipped = np.ones((K, A), dtype=bool)
    blocks: list[tuple[np.ndarray, ...]] = []
    for k, cat in enumerate(cat_ids.tolist()):
        offset = 0  # seq: where this image's kept detections start in the concatenation
        for img in img_ids.tolist():
            g_all = np.asarray(gts.get((img, cat), []), dtype=np.int64)
            d_all = np.asarray(dts.get((img, cat), []), dtype=np.int64)
            if g_all.size == 0 and d_all.size == 0:
                continue  # evaluateImg returns None
            skipped[k, :] = False
            # computeIoU / evaluateImg: dt sorted by -score (mergesort), cut to maxDets[-1]
            d = d_all[np.argsort(-dt["score"][d_all], kind="mergesort")][:max_det]
            D, G = d.size, g_all.size
            ious = box_iou(dt_box[d], gt_box[g_all], gt["iscrowd"][g_all]) if D and G else None
            for a, (lo, hi) in enumerate(p.area_rng):
                area = gt["area"][g_all]
                ignore = (gt["iscrowd"][g_all] != 0) | (area < lo) | (area > hi)
                gtind = np.argsort(ignore.astype(np.int64), kind="mergesort")
                gtIg = ignore[gtind].astype(np.int64)
                npig[k, a] += int(np.count_nonzero(gtIg == 0))
                dtm = np.zeros((T, D), dtype=bool)  # dtm != 0
                dtIg = np.zeros((T, D), dtype=bool)
                if ious is not None:
                    g = g_all[gtind]
                    dtm, dtIg = _greedy(
                        ious[:, gtind],
                        thrs,
                        gtIg,
                        gt["iscrowd"][g] != 0,
                        gt_matched[g],
                        dt_consumes[d],
                    )
                # set unmatched detections outside of area range to ignore
                out = (dt["area"][d] < lo) | (dt["area"][d] > hi)
                dtIg = dtIg | (~dtm & out[None, :])
                label = np.where(dtIg, 0, np.where(dtm, 1, -1)).astype(np.int8)
                ranks = np.tile(np.arange(D), T)
                blocks.append(
                    (
                        np.full(T * D, k),
                        np.full(T * D, a),
                        np.repeat(np.arange(T), D),
                        np.full(T * D, img),
                        d[ranks],
                        ranks,
                        label.reshape(-1),
                        offset + ranks,
                    )
                )
            offset += D
    return _rows(blocks, p, cat_ids, dt, npig, skipped)


def _greedy(
    ious: FloatArray,
    thrs: list[float],
    gtIg: IntArray,
    iscrowd: npt.NDArray[np.bool_],
    gt_matched: npt.NDArray[np.bool_],
    dt_consumes: npt.NDArray[np.bool_],
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """``evaluateImg``'s loop, line for line (gt already sorted ignored-last); returns
    ``dtm != 0`` and ``dtIg``. ``gtm[tind, m] = d['id']`` keeps whether the id reads > 0."""
    D, G = ious.shape
    gtm = np.zeros((len(thrs), G), dtype=bool)
    dtm = np.zeros((len(thrs), D), dtype=bool)
    dtIg = np.zeros((len(thrs), D), dtype=bool)
    for tind, t in enumerate(thrs):
        for dind in range(D):
            # information about best match so far (m=-1 -> unmatched)
            iou = min([t, 1 - 1e-10])
            m = -1
            for gind in range(G):
                # if this gt already matched, and not a crowd, continue
                if gtm[tind, gind] and not iscrowd[gind]:
                    continue
                # if dt matched to reg gt, and on ignore gt, stop
                if m > -1 and gtIg[m] == 0 and gtIg[gind] == 1:
                    break
                # continue to next gt unless better match made
                if ious[dind, gind] < iou:
                    continue
                # if match successful and best so far, store appropriately
                iou = ious[dind, gind]
                m = gind
            # if match made store id of match for both dt and gt
            if m == -1:
                continue
            dtIg[tind, dind] = gtIg[m]
            dtm[tind, dind] = gt_matched[m]
            gtm[tind, m] = dt_consumes[dind]
    return dtm, dtIg


def _rows(
    blocks: list[tuple[np.ndarray, ...]],
    p: CocoParams,
    cat_ids: np.ndarray,
    dt: dict[str, np.ndarray],
    npig: IntArray,
    skipped: npt.NDArray[np.bool_],
) -> CocoLists:
    if blocks:
        k, a, t, img, d, rank, label, seq = (np.concatenate(c) for c in zip(*blocks, strict=True))
    else:
        k = a = t = d = rank = seq = np.zeros(0, dtype=np.int64)
        img = np.asarray(p.img_ids)[:0]
        label = np.zeros(0, dtype=np.int8)
    order = np.lexsort((seq, t, a, k))
    return CocoLists(
        params=p,
        category_id=cat_ids[k[order]],
        area_index=a[order].astype(np.int64),
        iou_index=t[order].astype(np.int64),
        image_id=img[order],
        detection_id=dt["id"][d[order]],
        score=dt["score"][d[order]],
        rank=rank[order].astype(np.int64),
        label=label[order].astype(np.int8),
        seq=seq[order].astype(np.int64),
        npig=npig,
        skipped=skipped,
    )
