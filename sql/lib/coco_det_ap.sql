-- COCO's AP of each category (pycocotools COCOeval.accumulate, then summarize's mean over the
-- IoU thresholds): for each list of lib/coco_det_lists.sql, the 101-point interpolated AP
-- (lib/interpolated_ap.sql) of its points (lib/coco_det_curve.sql); a category's value is
-- the mean over its lists, NULL without ground truth in the area range (pycocotools' -1).
-- Parameters: $runs integer[]. Output: run_id, group_id, value.
-- @include lib/coco_det_curve.sql area={area} label={label} maxdets={maxdets} iou={iou}
,
-- @include lib/envelope.sql
,
-- @include lib/interpolated_ap.sql step=0.01 last=100 n=101 grid=numpy
select run_id, group_id,
       sum_exact(value) / nullif(cast(count(value) as double), 0) as value
from per_list
group by run_id, group_id
