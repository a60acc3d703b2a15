"""PASCAL VOC detection AP as its two reference codes compute it, transcribed.

- :func:`voc_eval`: rbgirshick/py-faster-rcnn ``lib/datasets/voc_eval.py`` @
  45e0da9a246fab5fd86e8c96dc351be7f145499f, the body of ``voc_eval`` from "extract gt
  objects for this class" on, verbatim: the annotations come as ``recs`` (``parse_rec``'s
  dicts) and the detection file as its lines, instead of being read from files. With
  ``eps_precision`` the one line d66cc2bff142ca07f521db06ca3e9e10dbc8df20 changed.
  ``voc_ap`` is :func:`tests.conformance.reference_voc.voc_ap` (verbatim, same commit).
- :func:`vocevaldet`: the devkit's ``VOCcode/VOCevaldet.m``, npinto/VOCdevkit, translated
  line by line (MATLAB's 1-based indices shifted, nothing else): the matching loop is the
  same @ 2b8c01c3ec2c78bb854fa528d2142450a476de3b (VOC2007) and @
  89f2ff3df5ab5b912b10b845f7458b4940fedb26 (VOC2011); the AP is the VOC2007 file's 11-point
  loop or the VOC2011 ``VOCcode/VOCap.m``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tests.conformance.reference_voc import matlab_max, voc07_devkit, voc_ap


def voc_eval(
    lines: Sequence[str],
    recs: Mapping[str, list[dict[str, Any]]],
    imagenames: Sequence[str],
    classname: str,
    ovthresh: float = 0.5,
    use_07_metric: bool = False,
    eps_precision: bool = False,
) -> dict[str, Any]:
    """``rec, prec, ap`` of one class, and (added) the order and the marks before cumsum."""
    # extract gt objects for this class
    class_recs = {}
    npos = 0
    for imagename in imagenames:
        R = [obj for obj in recs[imagename] if obj["name"] == classname]
        bbox = np.array([x["bbox"] for x in R])
        difficult = np.array([x["difficult"] for x in R]).astype(np.bool)
        det = [False] * len(R)
        npos = npos + sum(~difficult)
        class_recs[imagename] = {"bbox": bbox, "difficult": difficult, "det": det}

    # read dets
    splitlines = [x.strip().split(" ") for x in lines]
    image_ids = [x[0] for x in splitlines]
    confidence = np.array([float(x[1]) for x in splitlines])
    BB = np.array([[float(z) for z in x[2:]] for x in splitlines])

    # sort by confidence
    sorted_ind = np.argsort(-confidence)
    sorted_scores = np.sort(-confidence)  # noqa: F841 (verbatim)
    BB = BB[sorted_ind, :]
    image_ids = [image_ids[x] for x in sorted_ind]

    # go down dets and mark TPs and FPs
    nd = len(image_ids)
    tp = np.zeros(nd)
    fp = np.zeros(nd)
    ovmaxes = np.zeros(nd)  # added
    for d in range(nd):
        R = class_recs[image_ids[d]]
        bb = BB[d, :].astype(float)
        ovmax = -np.inf
        BBGT = R["bbox"].astype(float)

        if BBGT.size > 0:
            # compute overlaps
            # intersection
            ixmin = np.maximum(BBGT[:, 0], bb[0])
            iymin = np.maximum(BBGT[:, 1], bb[1])
            ixmax = np.minimum(BBGT[:, 2], bb[2])
            iymax = np.minimum(BBGT[:, 3], bb[3])
            iw = np.maximum(ixmax - ixmin + 1.0, 0.0)
            ih = np.maximum(iymax - iymin + 1.0, 0.0)
            inters = iw * ih

            # union
            uni = (
                (bb[2] - bb[0] + 1.0) * (bb[3] - bb[1] + 1.0)
                + (BBGT[:, 2] - BBGT[:, 0] + 1.0) * (BBGT[:, 3] - BBGT[:, 1] + 1.0)
                - inters
            )

            overlaps = inters / uni
            ovmax = np.max(overlaps)
            jmax = np.argmax(overlaps)

        ovmaxes[d] = ovmax  # added
        if ovmax > ovthresh:
            if not R["difficult"][jmax]:
                if not R["det"][jmax]:
                    tp[d] = 1.0
                    R["det"][jmax] = 1
                else:
                    fp[d] = 1.0
        else:
            fp[d] = 1.0

    marks = {"sorted_ind": sorted_ind, "tp": tp.copy(), "fp": fp.copy(), "ovmax": ovmaxes}  # added
    # compute precision recall
    fp = np.cumsum(fp)
    tp = np.cumsum(tp)
    rec = tp / float(npos)
    # d66cc2bf: "avoid divide by zero in case the first detection matches a difficult
    # ground truth": prec = tp / np.maximum(tp + fp, np.finfo(np.float64).eps)
    prec = tp / np.maximum(tp + fp, np.finfo(np.float64).eps) if eps_precision else tp / (tp + fp)
    ap = voc_ap(rec, prec, use_07_metric)

    return {**marks, "rec": rec, "prec": prec, "ap": ap}


def vocap(rec: list[float], prec: list[float]) -> float:
    """``VOCap.m`` (VOC2010+)::

        mrec=[0 ; rec ; 1];
        mpre=[0 ; prec ; 0];
        for i=numel(mpre)-1:-1:1
            mpre(i)=max(mpre(i),mpre(i+1));
        end
        i=find(mrec(2:end)~=mrec(1:end-1))+1;
        ap=sum((mrec(i)-mrec(i-1)).*mpre(i));

    ``sum`` is taken left to right (MATLAB may block a long sum: 1e-12, not bits).
    """
    mrec = [0.0, *rec, 1.0]
    mpre = [0.0, *prec, 0.0]
    for i in range(len(mpre) - 2, -1, -1):
        m = matlab_max(np.array([mpre[i], mpre[i + 1]]))
        assert m is not None
        mpre[i] = m
    idx = [k + 1 for k in range(len(mrec) - 1) if mrec[k + 1] != mrec[k]]
    ap = 0.0
    for i in idx:
        ap = ap + (mrec[i] - mrec[i - 1]) * mpre[i]
    return ap


def vocevaldet(
    gtids: Sequence[str],
    recs: Sequence[list[dict[str, Any]]],
    cls: str,
    ids: Sequence[str],
    confidence: Sequence[float],
    boxes: Sequence[Sequence[float]],
    minoverlap: float = 0.5,
) -> dict[str, Any]:
    """``VOCevaldet.m``'s matching, line by line; ``recs(i).objects`` is ``recs[i]``, the
    results file's columns ``ids, confidence, b1..b4`` are ``ids, confidence, boxes``."""
    npos = 0
    gt = []
    for i in range(len(gtids)):
        # clsinds=strmatch(cls,{recs(i).objects(:).class},'exact');
        clsinds = [k for k, o in enumerate(recs[i]) if o["class"] == cls]
        # gt(i).BB=cat(1,recs(i).objects(clsinds).bbox)';
        BB_i = np.array([recs[i][k]["bbox"] for k in clsinds], dtype=float).reshape(-1, 4).T
        diff = np.array([recs[i][k]["difficult"] for k in clsinds], dtype=bool)
        gt.append({"BB": BB_i, "diff": diff, "det": np.zeros(len(clsinds), dtype=bool)})
        npos = npos + int(np.sum(~diff))  # npos=npos+sum(~gt(i).diff);

    BB = np.array(boxes, dtype=float).reshape(-1, 4).T  # BB=[b1 b2 b3 b4]';
    conf = np.array(confidence, dtype=float)
    si = np.argsort(-conf, kind="stable")  # [sc,si]=sort(-confidence); MATLAB's sort is stable
    ids = [ids[k] for k in si]
    BB = BB[:, si]

    nd = len(confidence)
    tp = np.zeros(nd)
    fp = np.zeros(nd)
    ovmaxes = np.zeros(nd)  # added
    for d in range(nd):
        found = [k for k, g in enumerate(gtids) if g == ids[d]]  # i=VOChash_lookup(hash,ids{d});
        if not found:
            raise ValueError(f'unrecognized image "{ids[d]}"')
        if len(found) > 1:
            raise ValueError(f'multiple image "{ids[d]}"')
        i = found[0]
        bb = BB[:, d]
        ovmax = -math.inf
        jmax = -1
        for j in range(gt[i]["BB"].shape[1]):
            bbgt = gt[i]["BB"][:, j]
            bi = [
                max(bb[0], bbgt[0]),
                max(bb[1], bbgt[1]),
                min(bb[2], bbgt[2]),
                min(bb[3], bbgt[3]),
            ]
            iw = bi[2] - bi[0] + 1
            ih = bi[3] - bi[1] + 1
            if iw > 0 and ih > 0:
                # compute overlap as area of intersection / area of union
                ua = (
                    (bb[2] - bb[0] + 1) * (bb[3] - bb[1] + 1)
                    + (bbgt[2] - bbgt[0] + 1) * (bbgt[3] - bbgt[1] + 1)
                    - iw * ih
                )
                ov = iw * ih / ua
                if ov > ovmax:
                    ovmax = ov
                    jmax = j
        ovmaxes[d] = ovmax  # added
        # assign detection as true positive/don't care/false positive
        if ovmax >= minoverlap:
            if not gt[i]["diff"][jmax]:
                if not gt[i]["det"][jmax]:
                    tp[d] = 1  # true positive
                    gt[i]["det"][jmax] = True
                else:
                    fp[d] = 1  # false positive (multiple detection)
        else:
            fp[d] = 1  # false positive

    marks = {"si": si, "tp": tp.copy(), "fp": fp.copy(), "ovmax": ovmaxes}
    # compute precision/recall
    fp = np.cumsum(fp)
    tp = np.cumsum(tp)
    with np.errstate(divide="ignore", invalid="ignore"):  # MATLAB: 0/0 = NaN, no warning
        rec = tp / npos
        prec = tp / (fp + tp)
    rec_l, prec_l = rec.tolist(), prec.tolist()
    # VOCevaldet.m @ 2b8c01c3 (2007) ends in VOCevalcls.m's 11-point loop, transcribed there
    return {**marks, "ap07": voc07_devkit(rec, prec), "ap": vocap(rec_l, prec_l)}
