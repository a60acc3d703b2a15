"""COCO's 101-point AP as pycocotools computes it, transcribed from ``COCOeval.accumulate``
and ``COCOeval.summarize`` (cocodataset/cocoapi ``PythonAPI/pycocotools/cocoeval.py`` @
e81c312b4e5e400c740c66c42eff5ecce6736f65).

The mapping of an evalstore list onto one COCO category at one IoU threshold, one area range
and one ``maxDets``: every retrieved item (finite score) is one detection, on an image of its
own (so ``maxDets`` never truncates); label +1 = a detection matched to a non-ignored ground
truth (``dtm > 0``, ``dtIg = 0``), -1 = an unmatched detection (``dtm = 0``), 0 = a detection
matched to an ignored ground truth (``dtIg = 1``: neither tp nor fp); ``npig`` = the +1 labels,
retrieved or not (a positive at -inf is a ground truth no detection found).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: ``Params.setDetParams``: "np.arange causes trouble. the data point on arange is slightly
#: larger than the true value"::
#:
#:     self.recThrs = np.linspace(.0, 1.00, int(np.round((1.00 - .0) / .01)) + 1, endpoint=True)
REC_THRS = np.linspace(0.0, 1.00, int(np.round((1.00 - 0.0) / 0.01)) + 1, endpoint=True)


def accumulate_category(scores: Sequence[float], labels: Sequence[int]) -> np.ndarray | None:
    """``precision[t, :, k, a, m]`` of one category (``None`` where accumulate ``continue``s:
    ``npig == 0``, and the category keeps its -1), transcribing::

        dtScores = np.concatenate([e['dtScores'][0:maxDet] for e in E])
        inds = np.argsort(-dtScores, kind='mergesort')
        dtm = np.concatenate([e['dtMatches'][:, 0:maxDet] for e in E], axis=1)[:, inds]
        dtIg = np.concatenate([e['dtIgnore'][:, 0:maxDet] for e in E], axis=1)[:, inds]
        gtIg = np.concatenate([e['gtIgnore'] for e in E])
        npig = np.count_nonzero(gtIg == 0)
        if npig == 0:
            continue
        tps = np.logical_and(dtm, np.logical_not(dtIg))
        fps = np.logical_and(np.logical_not(dtm), np.logical_not(dtIg))
        tp_sum = np.cumsum(tps, axis=1).astype(dtype=np.float)
        fp_sum = np.cumsum(fps, axis=1).astype(dtype=np.float)
        for t, (tp, fp) in enumerate(zip(tp_sum, fp_sum)):
            tp = np.array(tp)
            fp = np.array(fp)
            nd = len(tp)
            rc = tp / npig
            pr = tp / (fp + tp + np.spacing(1))
            q = np.zeros((R, ))
            ...
            pr = pr.tolist()
            q = q.tolist()
            for i in range(nd - 1, 0, -1):
                if pr[i] > pr[i - 1]:
                    pr[i - 1] = pr[i]
            inds = np.searchsorted(rc, p.recThrs, side='left')
            try:
                for ri, pi in enumerate(inds):
                    q[ri] = pr[pi]
                    ss[ri] = dtScoresSorted[pi]
            except:  # noqa: E722
                pass
            precision[t, :, k, a, m] = np.array(q)

    (``np.float`` is ``float``; ``ss``, the scores at the thresholds, is not needed.)
    """
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels)
    retrieved = scores > -np.inf
    dtScores = scores[retrieved]
    inds = np.argsort(-dtScores, kind="mergesort")
    dtm = (labels[retrieved] != -1)[inds]  # matched: to a ground truth, ignored or not
    dtIg = (labels[retrieved] == 0)[inds]
    gtIg = np.zeros(int(np.sum(labels == 1)))
    npig = np.count_nonzero(gtIg == 0)
    if npig == 0:
        return None
    tps = np.logical_and(dtm, np.logical_not(dtIg))
    fps = np.logical_and(np.logical_not(dtm), np.logical_not(dtIg))
    tp = np.cumsum(tps).astype(dtype=float)
    fp = np.cumsum(fps).astype(dtype=float)
    nd = len(tp)
    rc = tp / npig
    pr = tp / (fp + tp + np.spacing(1))
    q = np.zeros((len(REC_THRS),))
    pr_list = pr.tolist()
    q_list = q.tolist()
    for i in range(nd - 1, 0, -1):
        if pr_list[i] > pr_list[i - 1]:
            pr_list[i - 1] = pr_list[i]
    found = np.searchsorted(rc, REC_THRS, side="left")
    try:
        for ri, pi in enumerate(found):
            q_list[ri] = pr_list[pi]
    except IndexError:  # pycocotools: a bare except around the same loop
        pass
    return np.array(q_list)


def summarize_ap(precisions: Sequence[np.ndarray | None]) -> float:
    """``summarize``'s ``_summarize(ap=1)`` over categories (one IoU, area, maxDets)::

        s = self.eval['precision']
        ...
        if len(s[s > -1]) == 0:
            mean_s = -1
        else:
            mean_s = np.mean(s[s > -1])

    A category without ground truth keeps ``precision = -1`` and is left out.
    """
    s = np.stack([np.full(len(REC_THRS), -1.0) if p is None else p for p in precisions])
    if len(s[s > -1]) == 0:
        return -1.0
    return float(np.mean(s[s > -1]))


def category_ap(scores: Sequence[float], labels: Sequence[int]) -> float:
    """The AP of one category: :func:`summarize_ap` of it alone (NaN for ``npig == 0``, which
    summarize would leave out)."""
    q = accumulate_category(scores, labels)
    return float("nan") if q is None else summarize_ap([q])
