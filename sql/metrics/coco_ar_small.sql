-- coco_ar_small: COCO's ARs (pycocotools COCOeval.summarize, bbox): AR of small objects; per category,
-- its mean over categories with ground truth is ARs.
-- Parameters: $runs integer[]. Output: run_id, group_id (the category), value.
with
-- @include lib/coco_det_ar.sql area=small label=label_small maxdets=100 iou=null
