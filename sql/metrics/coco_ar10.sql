-- coco_ar10: COCO's AR10 (pycocotools COCOeval.summarize, bbox): AR given 10 detections per image and category; per category,
-- its mean over categories with ground truth is AR10.
-- Parameters: $runs integer[]. Output: run_id, group_id (the category), value.
with
-- @include lib/coco_det_ar.sql area=all label=label maxdets=10 iou=null
