-- coco_ar1: COCO's AR1 (pycocotools COCOeval.summarize, bbox): AR given 1 detection per image and category; per category,
-- its mean over categories with ground truth is AR1.
-- Parameters: $runs integer[]. Output: run_id, group_id (the category), value.
with
-- @include lib/coco_det_ar.sql area=all label=label maxdets=1 iou=null
