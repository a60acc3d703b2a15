"""COCO's precision, recall and 12 numbers from the ranked lists of
:func:`evalstore.core.detection_coco.coco_lists` (NumPy reference, no I/O).

Transcribed from ``COCOeval.accumulate`` and ``COCOeval.summarize`` (cocodataset/cocoapi
``PythonAPI/pycocotools/cocoeval.py`` @ 8c9bcc3cf640524c4c20a9c40e89cb6a2f2fa0e9), with the
same float operations in the same order, so the arrays equal pycocotools' element for element.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from evalstore.core.detection import CocoParams
from evalstore.core.detection_coco import CocoLists
from evalstore.errors import InvalidInput

__all__ = [
    "COCO_STATS",
    "coco_accumulate",
    "coco_summarize",
    "coco_summarize_by_category",
]

FloatArray = npt.NDArray[np.float64]

#: the 12 numbers of ``_summarizeDets``, in its order: name, AP (else AR), ``iouThr``,
#: ``areaRng`` and which of ``max_dets``::
#:
#:     stats[0] = _summarize(1)
#:     stats[1] = _summarize(1, iouThr=.5, maxDets=self.params.maxDets[2])
#:     stats[2] = _summarize(1, iouThr=.75, maxDets=self.params.maxDets[2])
#:     stats[3] = _summarize(1, areaRng='small', maxDets=self.params.maxDets[2])
#:     ...
#:     stats[6] = _summarize(0, maxDets=self.params.maxDets[0])
#:     ...
#:     stats[11] = _summarize(0, areaRng='large', maxDets=self.params.maxDets[2])
COCO_STATS: tuple[tuple[str, bool, float | None, str, int], ...] = (
    ("AP", True, None, "all", 2),
    ("AP50", True, 0.5, "all", 2),
    ("AP75", True, 0.75, "all", 2),
    ("APs", True, None, "small", 2),
    ("APm", True, None, "medium", 2),
    ("APl", True, None, "large", 2),
    ("AR1", False, None, "all", 0),
    ("AR10", False, None, "all", 1),
    ("AR100", False, None, "all", 2),
    ("ARs", False, None, "small", 2),
    ("ARm", False, None, "medium", 2),
    ("ARl", False, None, "large", 2),
)


def coco_accumulate(lists: CocoLists) -> tuple[FloatArray, FloatArray]:
    """``eval['precision']`` [T, R, K, A, M] and ``eval['recall']`` [T, K, A, M], -1 where
    ``accumulate`` leaves a cell (no ground truth and no detection of the category, or no
    non-ignored ground truth in the area range). For each (category, area range, maxDets m,
    threshold), over the rows of ``rank < m`` sorted by ``(-score, seq)``::

        tps = np.logical_and(               dtm,  np.logical_not(dtIg) )
        fps = np.logical_and(np.logical_not(dtm), np.logical_not(dtIg) )
        tp_sum = np.cumsum(tps, axis=1).astype(dtype=float)
        ...
        rc = tp / npig
        pr = tp / (fp+tp+np.spacing(1))
        recall[t,k,a,m] = rc[-1] if nd else 0
        for i in range(nd-1, 0, -1):
            if pr[i] > pr[i-1]:
                pr[i-1] = pr[i]
        inds = np.searchsorted(rc, p.recThrs, side='left')
        try:
            for ri, pi in enumerate(inds):
                q[ri] = pr[pi]
        except:
            pass

    (the envelope is a reversed running maximum, and the ``try`` stops at the first index past
    the end: ``inds`` never decreases). A hit then a miss on the one ground truth:

    >>> from evalstore.core.detection_coco import coco_lists
    >>> gt = {"image_id": [1], "category_id": [1], "id": [1], "x": [0], "y": [0],
    ...       "w": [10], "h": [10], "area": [100], "iscrowd": [0]}
    >>> dt = {"image_id": [1, 1], "category_id": [1, 1], "id": [1, 2], "x": [0, 50],
    ...       "y": [0, 50], "w": [10, 8], "h": [10, 8], "score": [0.9, 0.8]}
    >>> precision, recall = coco_accumulate(coco_lists(dt, gt, CocoParams()))
    >>> precision.shape, recall[0, 0, :, 2].tolist()
    ((10, 101, 1, 4, 3), [1.0, 1.0, -1.0, -1.0])
    >>> float(precision[0, 100, 0, 0, 2])  # 1 / (1 + np.spacing(1))
    0.9999999999999998
    """
    p = lists.params
    T, R, K = len(p.iou_thrs), len(p.rec_thrs), len(p.cat_ids or ())
    A, M = len(p.area_rng), len(p.max_dets)
    rec_thrs = np.asarray(p.rec_thrs, dtype=np.float64)
    precision = -np.ones((T, R, K, A, M))
    recall = -np.ones((T, K, A, M))
    k_index = np.searchsorted(np.asarray(p.cat_ids), lists.category_id)
    code = (k_index * A + lists.area_index) * T + lists.iou_index  # rows are sorted by it
    bounds = np.searchsorted(code, np.arange(K * A * T + 1))
    for k in range(K):
        for a in range(A):
            if lists.skipped[k, a] or lists.npig[k, a] == 0:
                continue
            npig = lists.npig[k, a]
            for t in range(T):
                lo, hi = bounds[(k * A + a) * T + t], bounds[(k * A + a) * T + t + 1]
                for m, max_det in enumerate(p.max_dets):
                    keep = lists.rank[lo:hi] < max_det  # rows are in seq order
                    scores = lists.score[lo:hi][keep]
                    inds = np.argsort(-scores, kind="mergesort")
                    label = lists.label[lo:hi][keep][inds]
                    tp = np.cumsum(label == 1).astype(dtype=float)
                    fp = np.cumsum(label == -1).astype(dtype=float)
                    nd = len(tp)
                    rc = tp / npig
                    pr = tp / (fp + tp + np.spacing(1))
                    recall[t, k, a, m] = rc[-1] if nd else 0
                    envelope = np.maximum.accumulate(pr[::-1])[::-1]
                    at = np.searchsorted(rc, rec_thrs, side="left")
                    q = np.zeros((R,))
                    reached = at < nd
                    q[reached] = envelope[at[reached]]
                    precision[t, :, k, a, m] = q
    return precision, recall


def _summarize(
    precision: FloatArray,
    recall: FloatArray,
    p: CocoParams,
    ap: bool,
    iou_thr: float | None,
    area_rng: str,
    max_dets: int,
) -> float | None:
    """``_summarize``: the mean of the cells > -1, ``None`` for its -1."""
    aind = [i for i, a in enumerate(p.area_lbl) if a == area_rng]
    mind = [i for i, m in enumerate(p.max_dets) if m == max_dets]
    s = precision if ap else recall
    if iou_thr is not None:
        t = np.where(iou_thr == np.asarray(p.iou_thrs))[0]
        s = s[t]
    s = s[:, :, :, aind, mind] if ap else s[:, :, aind, mind]
    if len(s[s > -1]) == 0:
        return None
    return float(np.mean(s[s > -1]))


def coco_summarize(
    precision: FloatArray, recall: FloatArray, params: CocoParams | None = None
) -> dict[str, float | None]:
    """The 12 numbers of ``summarize()`` (:data:`COCO_STATS`) by name, ``None`` where
    pycocotools prints -1 (no cell defined). ``params`` gives the thresholds, area labels and
    ``max_dets`` (at least 3) the arrays were computed with; the defaults if not given.

    >>> from evalstore.core.detection_coco import coco_lists
    >>> gt = {"image_id": [1], "category_id": [1], "id": [1], "x": [0], "y": [0],
    ...       "w": [10], "h": [10], "area": [100], "iscrowd": [0]}
    >>> dt = {"image_id": [1], "category_id": [1], "id": [1], "x": [0], "y": [0],
    ...       "w": [10], "h": [10], "score": [0.9]}
    >>> stats = coco_summarize(*coco_accumulate(coco_lists(dt, gt, CocoParams())))
    >>> stats["AP"], stats["APs"], stats["AR1"], stats["APl"]
    (0.9999999999999998, 0.9999999999999998, 1.0, None)
    """
    p = params if params is not None else CocoParams()
    if len(p.max_dets) < 3:
        raise InvalidInput(f"COCO's 12 numbers need 3 max_dets, got {p.max_dets}")
    return {
        name: _summarize(precision, recall, p, ap, thr, area, p.max_dets[m])
        for name, ap, thr, area, m in COCO_STATS
    }


def coco_summarize_by_category(
    precision: FloatArray, recall: FloatArray, params: CocoParams
) -> dict[object, dict[str, float | None]]:
    """:func:`coco_summarize` of each category alone (``precision[:, :, k]``, as detectron2's
    per-category AP reads ``precision[:, :, idx, 0, -1]``), keyed by ``params.cat_ids``
    (``lists.params`` of :func:`~evalstore.core.detection_coco.coco_lists`).

    >>> from evalstore.core.detection_coco import coco_lists
    >>> gt = {"image_id": [1, 1], "category_id": [1, 2], "id": [1, 2], "x": [0, 0],
    ...       "y": [0, 0], "w": [10, 10], "h": [10, 10], "iscrowd": [0, 0]}
    >>> dt = {"image_id": [1], "category_id": [1], "id": [1], "x": [0], "y": [0],
    ...       "w": [10], "h": [10], "score": [0.9]}
    >>> rows = coco_lists(dt, gt, CocoParams())
    >>> by_cat = coco_summarize_by_category(*coco_accumulate(rows), rows.params)
    >>> by_cat[1]["AR100"], by_cat[2]["AP"], by_cat[2]["AR100"]
    (1.0, 0.0, 0.0)
    """
    if params.cat_ids is None:
        raise InvalidInput("per category: params.cat_ids is needed (take lists.params)")
    return {
        cat: coco_summarize(precision[:, :, k : k + 1], recall[:, k : k + 1], params)
        for k, cat in enumerate(params.cat_ids)
    }
