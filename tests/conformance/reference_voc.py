"""PASCAL VOC classification AP as the devkit and py-faster-rcnn compute it, transcribed.

- ``voc07``: npinto/VOCdevkit ``VOCcode/VOCevalcls.m`` @
  b0890ec6a94d4f692b3cc8ae1f4c0fa3b1ac1fc8 (MATLAB);
- ``voc07-numpy`` and ``voc10``: rbgirshick/py-faster-rcnn ``lib/datasets/voc_eval.py`` @
  45e0da9a246fab5fd86e8c96dc351be7f145499f, ``voc_ap`` (``use_07_metric=True`` /
  ``False``; the ``False`` branch is the VOC2010+ devkit's ``VOCap.m``).

MATLAB semantics kept: ``sort`` is stable; ``a:d:b`` is built by MathWorks' colon algorithm
(:func:`colon`); ``max`` ignores NaN (and returns NaN only when every element is NaN, ``[]``
when there is none); ``0 / 0`` is NaN. py-faster-rcnn's ``voc_ap`` takes (rec, prec) vectors:
here they are the devkit's classification vectors (:func:`rec_prec`), the same arithmetic as
``voc_eval``'s ``rec = tp / float(npos); prec = tp / (tp + fp)`` over the cumulated marks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def colon(a: float, d: float, b: float) -> list[float]:
    """MATLAB's ``a:d:b``, as MathWorks technical solution 1-4FLI96 ("How does the COLON
    operator work?") and its COLONOP M-file build it: ``n = round((b - a) / d)`` steps; the
    first half is ``a + k*d``, the second half ``b - (n - k)*d`` (built down from ``b``); for
    an even ``n`` the middle element is ``(a + b) / 2``. (Written independently of
    ``tests/definitions.py``'s ``matlab_colon``; a test checks they agree.)
    """
    n = round((b - a) / d)
    out = [0.0] * (n + 1)
    half = n // 2
    for k in range(half + 1):
        out[k] = a + k * d
    for k in range(half + 1, n + 1):
        out[k] = b - (n - k) * d
    if n % 2 == 0:
        out[half] = (a + b) / 2
    return out


def matlab_max(values: np.ndarray) -> float | None:
    """MATLAB ``max`` of a vector: ``[]`` (None) if empty, NaN elements ignored."""
    if values.size == 0:
        return None
    finite = values[~np.isnan(values)]
    return float(finite.max()) if finite.size else math.nan


def rec_prec(
    gtids: Sequence[str], gt: Sequence[int], ids: Sequence[str], confidence: Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    """The ranking and the (rec, prec) vectors of ``VOCevalcls.m`` @ b0890ec6::

        [gtids,gt]=textread(sprintf(VOCopts.clsimgsetpath,cls,VOCopts.testset),'%s %d');
        hash=VOChash_init(gtids);
        [ids,confidence]=textread(sprintf(VOCopts.clsrespath,id,cls),'%s %f');
        out=ones(size(gt))*-inf;
        for i=1:length(ids)
            j=VOChash_lookup(hash,ids{i});
            if isempty(j)
                error('unrecognized image "%s"',ids{i});
            elseif length(j)>1
                error('multiple image "%s"',ids{i});
            else
                out(j)=confidence(i);
            end
        end
        [so,si]=sort(-out);
        tp=gt(si)>0;
        fp=gt(si)<0;
        fp=cumsum(fp);
        tp=cumsum(tp);
        rec=tp/sum(gt>0);
        prec=tp./(fp+tp);

    Images of the ground truth without a result keep ``-Inf``: ``sort(-out)`` (ascending,
    stable) ranks them last, in ground-truth order, and they are counted. A difficult image
    (``gt == 0``) is neither a tp nor an fp but keeps its place: it repeats the previous
    (rec, prec), or gives ``prec = 0/0 = NaN`` when it ranks above every other image.
    """
    hash_: dict[str, list[int]] = {}
    for j, gid in enumerate(gtids):
        hash_.setdefault(gid, []).append(j)
    out = np.full(len(gt), -np.inf)
    for i, image in enumerate(ids):
        j = hash_.get(image, [])
        if not j:
            raise ValueError(f'unrecognized image "{image}"')
        if len(j) > 1:
            raise ValueError(f'multiple image "{image}"')
        out[j[0]] = confidence[i]
    si = np.argsort(-out, kind="stable")  # [so,si]=sort(-out): ascending, stable
    gt_arr = np.asarray(gt)
    tp = np.cumsum(gt_arr[si] > 0).astype(np.float64)
    fp = np.cumsum(gt_arr[si] < 0).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        rec = tp / np.float64(np.sum(gt_arr > 0))
        prec = tp / (fp + tp)
    return rec, prec


def rec_prec_detections(
    confidence: Sequence[float], marks: Sequence[int], npos: int
) -> tuple[np.ndarray, np.ndarray]:
    """(rec, prec) over detections, as the devkit's detection code ``VOCevaldet.m`` (same
    repository and commit) builds them, once each detection is marked (+1 true positive, -1
    false positive, 0 "don't care": it matched a difficult object)::

        [sc,si]=sort(-confidence);
        ...
        % assign detection as true positive/don't care/false positive
        ...
        fp=cumsum(fp);
        tp=cumsum(tp);
        rec=tp/npos;
        prec=tp./(fp+tp);

    with ``npos`` the non-difficult objects, found or not. This is the reading of an evalstore
    list with items at -inf (not retrieved: no detection, but a positive still counts in
    ``npos``); py-faster-rcnn's ``voc_eval`` builds the same vectors (``rec = tp /
    float(npos); prec = tp / (tp + fp)``) after ``np.argsort(-confidence)``, NumPy's default
    sort, which is not stable: its tie order is unspecified, this one (stable, as MATLAB) is
    the input order the protocols name.
    """
    confidence = np.asarray(confidence, dtype=np.float64)
    si = np.argsort(-confidence, kind="stable")
    marks_arr = np.asarray(marks)[si]
    tp = np.cumsum(marks_arr == 1).astype(np.float64)
    fp = np.cumsum(marks_arr == -1).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        rec = tp / np.float64(npos)
        prec = tp / (fp + tp)
    return rec, prec


def voc07_devkit(rec: np.ndarray, prec: np.ndarray) -> float:
    """The 11-point AP of ``VOCevalcls.m`` @ b0890ec6::

        ap=0;
        for t=0:0.1:1
            p=max(prec(rec>=t));
            if isempty(p)
                p=0;
            end
            ap=ap+p/11;
        end

    (``VOCevaldet.m`` has the same loop.) ``rec >= t`` is false at NaN (a class without
    positives: ``rec = 0/0``), so such a class gets ``ap = 0``.
    """
    ap = 0.0
    for t in colon(0.0, 0.1, 1.0):
        with np.errstate(invalid="ignore"):
            p = matlab_max(prec[rec >= t])
        if p is None:
            p = 0.0
        ap = ap + p / 11
    return ap


def voc_ap(rec: np.ndarray, prec: np.ndarray, use_07_metric: bool = False) -> float:
    """py-faster-rcnn ``voc_ap`` (lib/datasets/voc_eval.py @ 45e0da9a), verbatim::

        if use_07_metric:
            # 11 point metric
            ap = 0.
            for t in np.arange(0., 1.1, 0.1):
                if np.sum(rec >= t) == 0:  # noqa: SIM108 (verbatim)
                    p = 0
                else:
                    p = np.max(prec[rec >= t])
                ap = ap + p / 11.
        else:
            # correct AP calculation
            # first append sentinel values at the end
            mrec = np.concatenate(([0.], rec, [1.]))
            mpre = np.concatenate(([0.], prec, [0.]))
            # compute the precision envelope
            for i in range(mpre.size - 1, 0, -1):
                mpre[i - 1] = np.maximum(mpre[i - 1], mpre[i])
            # to calculate area under PR curve, look for points
            # where X axis (recall) changes value
            i = np.where(mrec[1:] != mrec[:-1])[0]
            # and sum (\\Delta recall) * prec
            ap = np.sum((mrec[i + 1] - mrec[i]) * mpre[i + 1])
        return ap

    NumPy's ``max`` and ``maximum`` propagate NaN (MATLAB's ignore it).
    """
    with np.errstate(invalid="ignore"):
        if use_07_metric:
            ap = 0.0
            for t in np.arange(0.0, 1.1, 0.1):
                if np.sum(rec >= t) == 0:  # noqa: SIM108 (verbatim)
                    p = 0.0
                else:
                    p = np.max(prec[rec >= t])
                ap = ap + p / 11.0
        else:
            mrec = np.concatenate(([0.0], rec, [1.0]))
            mpre = np.concatenate(([0.0], prec, [0.0]))
            for i in range(mpre.size - 1, 0, -1):
                mpre[i - 1] = np.maximum(mpre[i - 1], mpre[i])
            i = np.where(mrec[1:] != mrec[:-1])[0]
            ap = np.sum((mrec[i + 1] - mrec[i]) * mpre[i + 1])
    return float(ap)


def detections(scores: Sequence[float], labels: Sequence[int]) -> dict[str, float]:
    """The three protocols' AP of one evalstore list read as a class's detections
    (:func:`rec_prec_detections`): the retrieved items (finite scores) are the detections,
    the +1 labels (retrieved or not) the objects."""
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels)
    found = scores > -np.inf
    rec, prec = rec_prec_detections(scores[found], labels[found], int(np.sum(labels == 1)))
    return {
        "voc07": voc07_devkit(rec, prec),
        "voc07-numpy": voc_ap(rec, prec, use_07_metric=True),
        "voc10": voc_ap(rec, prec, use_07_metric=False),
    }


def devkit_class(
    gtids: Sequence[str], gt: Sequence[int], ids: Sequence[str], confidence: Sequence[float]
) -> dict[str, float]:
    """The three protocols' AP of one class: ``voc07`` (the devkit), ``voc07-numpy`` and
    ``voc10`` (py-faster-rcnn's ``voc_ap`` over the devkit's rec/prec)."""
    rec, prec = rec_prec(gtids, gt, ids, confidence)
    return {
        "voc07": voc07_devkit(rec, prec),
        "voc07-numpy": voc_ap(rec, prec, use_07_metric=True),
        "voc10": voc_ap(rec, prec, use_07_metric=False),
    }
