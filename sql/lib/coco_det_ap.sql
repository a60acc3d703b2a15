-- COCO's AP of each category (pycocotools COCOeval.accumulate, then summarize's mean over the
-- IoU thresholds): for each list of lib/coco_det_lists.sql, precision = tp / (fp + tp +
-- np.spacing(1)) and recall = tp / n_pos at each detection in ranking order (descending
-- score, then images in id order, then rank: det_matches.seq), the 101-point interpolated AP
-- of lib/interpolated_ap.sql; a category's value is the mean over its lists, NULL without
-- ground truth in the area range (pycocotools' -1).
-- Parameters: $runs integer[]. Output: run_id, group_id, value.
-- @include lib/coco_det_lists.sql area={area} label={label} maxdets={maxdets} iou={iou}
,
counted as (
    select k.run_id, k.list_id, l.group_id, l.n_pos,
           row_number() over w as rn,
           sum(case when k.label = 1 then 1 else 0 end) over w as tp,
           sum(case when k.label = -1 then 1 else 0 end) over w as fp
    from kept k
    join lists l on l.list_id = k.list_id
    window w as (partition by k.list_id order by k.seq rows between unbounded preceding and current row)
),
curve as (
    select run_id, list_id, group_id, rn, n_pos,
           cast(tp as double)
               / nullif(cast(fp as double) + cast(tp as double) + 2.220446049250313e-16::double, 0)
               as prec,
           cast(tp as double) / nullif(cast(n_pos as double), 0) as rec
    from counted
),
-- @include lib/envelope.sql
,
-- @include lib/interpolated_ap.sql step=0.01 last=100 n=101 grid=numpy
select run_id, group_id,
       sum_exact(value) / nullif(cast(count(value) as double), 0) as value
from per_list
group by run_id, group_id
