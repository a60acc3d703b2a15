-- The precision-recall points of each list of lib/coco_det_lists.sql, as pycocotools'
-- COCOeval.accumulate computes them: at each detection in ranking order (descending score,
-- then images in id order, then rank: det_matches.seq), precision = tp / (fp + tp +
-- np.spacing(1)) and recall = tp / n_pos.
-- Parameters: $runs integer[] (NULL: every run).
-- CTEs it defines: those of lib/coco_det_lists.sql and
--   curve(run_id, list_id, group_id, rn, n_pos, prec, rec), one row per kept detection.
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
)
