-- COCO's AR of each category (pycocotools COCOeval.accumulate's recall = the last point's
-- tp / npig, 0 for a list without detections; summarize's mean over the IoU thresholds): for
-- each list of lib/coco_det_lists.sql the matched detections over n_pos; a category's value
-- is the mean over its lists, NULL without ground truth in the area range (pycocotools' -1).
-- Parameters: $runs integer[]. Output: run_id, group_id, value.
-- @include lib/coco_det_lists.sql area={area} label={label} maxdets={maxdets} iou={iou}
,
per_list as (
    select l.run_id, l.list_id, l.group_id,
           case when l.n_pos = 0 then null
                else cast(count(k.seq) as double) / nullif(cast(l.n_pos as double), 0) end as value
    from lists l
    left join kept k on k.list_id = l.list_id and k.label = 1
    group by l.run_id, l.list_id, l.group_id, l.n_pos
)
select run_id, group_id,
       sum_exact(value) / nullif(cast(count(value) as double), 0) as value
from per_list
group by run_id, group_id
