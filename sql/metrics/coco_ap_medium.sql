-- coco_ap_medium: COCO's APm (pycocotools COCOeval.summarize, bbox): AP of medium objects (32^2 <= area <= 96^2); per category,
-- its mean over categories with ground truth is APm.
-- Parameters: $runs integer[]. Output: run_id, group_id (the category), value.
with
-- @include lib/coco_det_ap.sql area=medium label=label_medium maxdets=100 iou=null
