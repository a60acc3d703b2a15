-- coco_ar100: COCO's AR100 (pycocotools COCOeval.summarize, bbox): AR given 100 detections per image and category; per category,
-- its mean over categories with ground truth is AR100.
-- Parameters: $runs integer[]. Output: run_id, group_id (the category), value.
with
-- @include lib/coco_det_ar.sql area=all label=label maxdets=100 iou=null
