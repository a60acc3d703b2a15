-- coco_ap_small: COCO's APs (pycocotools COCOeval.summarize, bbox): AP of small objects (area < 32^2); per category,
-- its mean over categories with ground truth is APs.
-- Parameters: $runs integer[]. Output: run_id, group_id (the category), value.
with
-- @include lib/coco_det_ap.sql area=small label=label_small maxdets=100 iou=null
