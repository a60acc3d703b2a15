-- ap: non-interpolated average precision of each ranked list.
--   AP = sum over points t of (TP_t - TP_{t-1}) / P * P_t   (VLFeat vl_pr info.ap; with
--   `grouped` ties equal to scikit-learn's average_precision_score). P = 0 -> NULL.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id, value (one row per list).
with
-- @include lib/ranking_points.sql
,
per_list as (
    select run_id, group_id,
           sum(cast(d_tp as double) / nullif(cast(n_pos as double), 0) * prec) as s
    from curve
    group by run_id, group_id
)
select l.run_id, l.group_id,
       case when l.n_pos = 0 then null else coalesce(p.s, 0.0::double) end as value
from lists l
left join per_list p on p.run_id = l.run_id and p.group_id is not distinct from l.group_id
