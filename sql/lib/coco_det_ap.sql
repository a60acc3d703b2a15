-- COCO's AP of each category (pycocotools COCOeval.accumulate, then summarize's mean over the
-- IoU thresholds): for each list of lib/coco_det_lists.sql, the 101-point interpolated AP of
-- its precision-recall points (those of lib/coco_det_curve.sql: precision = tp / (fp + tp +
-- np.spacing(1)), recall = tp / n_pos, in det_matches.seq order); a category's value is the
-- mean over its lists, NULL without ground truth in the area range (pycocotools' -1).
--
-- The same sum as lib/interpolated_ap.sql over lib/envelope.sql (grid value t_k gets the
-- envelope max_{j >= i} P_j of the first point i with R_i >= t_k; R never decreases, so that is
-- the largest P_j of the points with R_j >= t_k), computed from the true positives alone,
-- without ranking every point three times: a false positive's precision is below that of the
-- true positive before it (same tp, larger rank), which has the same recall, or is 0 before
-- the first one (t_0 = 0 only, which every true positive also reaches). So:
--   hits: the true positives, their rank rn among the list's counted detections and tp;
--   steps: per list and n_le (how many grid values are <= R, as lib/interpolated_ap.sql
--       counts them), the largest precision;
--   served: env of the grid values n_before .. n_le - 1 = the largest precision of the steps
--       from this one on (a running max over at most 101 rows per list).
-- Parameters: $runs integer[]. Output: run_id, group_id, value.
-- @include lib/coco_det_lists.sql area={area} label={label} maxdets={maxdets} iou={iou}
,
ranked as (
    -- the true positives and either the other counted rows (the false positives) or, under the
    -- area range all, the rows not counted (label 0: ignored, i.e. matched to a crowd region,
    -- or of rank >= {maxdets}), which are few there; p: the place among them
    select l.list_id, m.seq, case when m.rank < {maxdets} then m.{label} else 0 end as label,
           row_number() over (partition by l.list_id order by m.seq) as p
    from det_matches m
    join lists l
      on l.run_id = m.run_id and l.group_id = m.category_id and l.iou_index = m.iou_index
    where m.matching = 'coco'
      and case when '{area}' = 'all' then m.{label} >= 0 or m.rank >= {maxdets}
               else m.{label} <> 0 and m.rank < {maxdets} end
),
hits as (
    -- rn: the true positive's rank among the counted rows, from p and tp; under the area range
    -- all from seq, its place among all the rows of its list (0, 1, ...: det_matches.seq
    -- numbers a category's detections of rank < 100, which are stored at each threshold)
    select list_id, tp,
           case when '{area}' = 'all' then seq + 1 - (p - tp) else p end as rn
    from (
        select list_id, seq, p, row_number() over (partition by list_id order by seq) as tp
        from ranked
        where label = 1
    ) t
),
enveloped as (
    -- lib/recall_grid_numpy.sql's input; env is here the point's own precision (fp = rn - tp)
    select l.run_id, h.list_id, h.rn,
           cast(h.tp as double)
               / nullif(cast(h.rn - h.tp as double) + cast(h.tp as double)
                        + 2.220446049250313e-16::double, 0)
               as env,
           cast(h.tp as double) / nullif(cast(l.n_pos as double), 0) as rec
    from hits h
    join lists l on l.list_id = h.list_id
),
-- @include lib/recall_grid_numpy.sql step=0.01 last=100
,
steps as (
    select list_id, n_le, max(env) as best
    from (
        -- n_le as lib/interpolated_ap.sql's served counts it
        select list_id, env,
               1 + case when k0 < 100 and t_above <= rec then k0 + 1
                        when k0 > 0 and t_at > rec then k0 - 1
                        else k0 end as n_le
        from grid
    ) g
    group by list_id, n_le
),
served as (
    select list_id, n_le,
           max(best) over (
               partition by list_id order by n_le desc
               rows between unbounded preceding and current row
           ) as env,
           lag(n_le, 1, 0) over (partition by list_id order by n_le) as n_before
    from steps
),
first_reached as (
    -- one row per grid value t_k and the envelope it takes
    select list_id, env, unnest(range(n_before, n_le)) as k
    from served
),
per_list as (
    select l.run_id, l.list_id, l.group_id,
           case when l.n_pos = 0 then null
                else coalesce(sum_exact(f.env), 0.0::double) / 101::double end as value
    from lists l
    left join first_reached f on f.list_id = l.list_id
    group by l.run_id, l.list_id, l.group_id, l.n_pos
)
select run_id, group_id,
       sum_exact(value) / nullif(cast(count(value) as double), 0) as value
from per_list
group by run_id, group_id
