-- coco_ap_large: COCO's APl (pycocotools COCOeval.summarize, bbox): AP of large objects (area > 96^2); per category,
-- its mean over categories with ground truth is APl.
-- Parameters: $runs integer[]. Output: run_id, group_id (the category), value.
with
-- @include lib/coco_det_ap.sql area=large label=label_large maxdets=100 iou=null
