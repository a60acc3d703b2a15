-- coco_ap: COCO's AP (pycocotools COCOeval.summarize, bbox): AP over IoU .50:.05:.95, all areas, 100 detections per image; per category,
-- its mean over categories with ground truth is AP.
-- Parameters: $runs integer[]. Output: run_id, group_id (the category), value.
with
-- @include lib/coco_det_ap.sql area=all label=label maxdets=100 iou=null
