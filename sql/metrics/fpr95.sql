-- fpr95: false positive rate FP_i / N at the first point (ranking order) with
-- R_i = TP_i / P >= 0.95 (HardNet ErrorRateAt95Recall, UBC PhotoTour). N = the -1 labels of
-- the list, retrieved or not. Recall 0.95 never reached by retrieved items -> 1.0 (a verifier
-- would have to accept everything). P = 0 or N = 0 -> NULL.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id, value (one row per list).
with
-- @include lib/ranking_points.sql
,
at_95 as (
    -- FP at the first point with R >= 0.95: R and FP only grow along the ranking, so it is
    -- the least FP of the points that reach 0.95
    select run_id, list_id, min(fp) as fp
    from curve
    where rec >= 0.95::double
    group by run_id, list_id
)
select l.run_id, l.group_id,
       case when l.n_pos = 0 or l.n_neg = 0 then null
            when a.fp is null then 1.0::double
            else cast(a.fp as double) / nullif(cast(l.n_neg as double), 0) end as value
from lists l
left join at_95 a on a.run_id = l.run_id and a.list_id = l.list_id
