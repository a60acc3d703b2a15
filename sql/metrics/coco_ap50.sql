-- coco_ap50: COCO's AP50 (pycocotools COCOeval.summarize, bbox): AP at IoU .50; per category,
-- its mean over categories with ground truth is AP50.
-- Parameters: $runs integer[]. Output: run_id, group_id (the category), value.
with
-- @include lib/coco_det_ap.sql area=all label=label maxdets=100 iou=0.5::double
