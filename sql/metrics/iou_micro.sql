-- iou_micro: pooled IOU of a run, sum TP / sum (TP + FP + FN) over its groups; NULL when
-- nothing was counted. One row per run (group_id NULL).
-- Parameters: $runs integer[].
-- Output: run_id, group_id, value.
select run_id, cast(null as varchar) as group_id,
       cast(sum(tp) as double) / nullif(cast(sum(tp + fp + fn) as double), 0) as value
from outcomes
where list_contains($runs, run_id)
group by run_id
