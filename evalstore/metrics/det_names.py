"""The names of the detection metrics: COCO's twelve numbers, the VOC APs and TIDE's errors,
each with what the catalogue and the references need to know of it.

>>> COCO_METRICS["coco_ap50"][0], TIDE_METRICS["tide_miss"][0]
('AP50', 'Miss')
"""

from __future__ import annotations

__all__ = ["COCO_METRICS", "TIDE_METRICS", "VOC_METRICS"]

#: registry name -> (COCO's name of the number, its description)
COCO_METRICS: dict[str, tuple[str, str]] = {
    "coco_ap": ("AP", "AP over IoU .50:.05:.95, every area, 100 detections per image"),
    "coco_ap50": ("AP50", "AP at IoU .50"),
    "coco_ap75": ("AP75", "AP at IoU .75"),
    "coco_ap_small": ("APs", "AP of small objects (area < 32^2)"),
    "coco_ap_medium": ("APm", "AP of medium objects (32^2 to 96^2)"),
    "coco_ap_large": ("APl", "AP of large objects (area > 96^2)"),
    "coco_ar1": ("AR1", "AR given 1 detection per image and category"),
    "coco_ar10": ("AR10", "AR given 10 detections per image and category"),
    "coco_ar100": ("AR100", "AR given 100 detections per image and category"),
    "coco_ar_small": ("ARs", "AR of small objects, 100 detections"),
    "coco_ar_medium": ("ARm", "AR of medium objects, 100 detections"),
    "coco_ar_large": ("ARl", "AR of large objects, 100 detections"),
}

#: registry name -> (the matching: voc_lists' reference, voc_ap_of_lists' formula, title)
VOC_METRICS: dict[str, tuple[str, str, str]] = {
    "ap_voc07_det": ("voc_eval", "voc_ap_07", "py-faster-rcnn voc_eval, 11-point AP"),
    "ap_voc10_det": ("voc_eval", "voc_ap", "py-faster-rcnn voc_eval, area under the envelope"),
    "ap_voc07_devkit_det": ("vocevaldet", "vocevaldet_07", "VOC2007 devkit, 11-point AP"),
    "ap_voc10_devkit_det": ("vocevaldet", "vocap", "VOC2010+ devkit VOCap.m"),
}

#: registry name -> (tidecv's short name of the error, or AP; what it is)
TIDE_METRICS: dict[str, tuple[str, str]] = {
    "tide_ap": ("AP", "TIDE's mAP at IoU 0.5 (tidecv run.ap)"),
    "tide_cls": ("Cls", "dAP of fixing the classification errors"),
    "tide_loc": ("Loc", "dAP of fixing the localisation errors"),
    "tide_both": ("Both", "dAP of fixing the errors of both class and localisation"),
    "tide_dupe": ("Dupe", "dAP of removing the duplicate detections"),
    "tide_bkg": ("Bkg", "dAP of removing the background detections"),
    "tide_miss": ("Miss", "dAP of finding the missed ground truth"),
    "tide_false_pos": ("FalsePos", "dAP of removing every false positive"),
    "tide_false_neg": ("FalseNeg", "dAP of finding every false negative"),
}
