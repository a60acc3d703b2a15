-- coco_ar_large: COCO's ARl (pycocotools COCOeval.summarize, bbox): AR of large objects; per category,
-- its mean over categories with ground truth is ARl.
-- Parameters: $runs integer[]. Output: run_id, group_id (the category), value.
with
-- @include lib/coco_det_ar.sql area=large label=label_large maxdets=100 iou=null
