-- coco_ar_medium: COCO's ARm (pycocotools COCOeval.summarize, bbox): AR of medium objects; per category,
-- its mean over categories with ground truth is ARm.
-- Parameters: $runs integer[]. Output: run_id, group_id (the category), value.
with
-- @include lib/coco_det_ar.sql area=medium label=label_medium maxdets=100 iou=null
