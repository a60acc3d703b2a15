-- coco_ap75: COCO's AP75 (pycocotools COCOeval.summarize, bbox): AP at IoU .75; per category,
-- its mean over categories with ground truth is AP75.
-- Parameters: $runs integer[]. Output: run_id, group_id (the category), value.
with
-- @include lib/coco_det_ap.sql area=all label=label maxdets=100 iou=0.75::double
