-- iou: per group (image pair, sequence), IOU = TP / (TP + FP + FN) (EventPoint); NULL when
-- the group counted nothing. Its mean over groups is the macro IOU.
-- Parameters: $runs integer[].
-- Output: run_id, group_id, value.
select run_id, group_id,
       cast(tp as double) / nullif(cast(tp + fp + fn as double), 0) as value
from outcomes
where list_contains($runs, run_id)
