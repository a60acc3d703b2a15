-- of1: OF1, ML-GCN's 2 OP OR / (OP + OR); NULL where OP + OR = 0, of the labels whose score
-- is >= the threshold (ML-GCN's overall: 0 on logits). Reference: megvii-research/ML-GCN
-- util.py @ 311f521031b91c59a8bd65a1afe3e6cf9a97916a, AveragePrecisionMeter.evaluation.
-- Rows: the run's OF1 (group_id NULL) only, at each threshold.
-- Parameters: $runs integer[], $task varchar, $thresholds double[].
-- Output: run_id, group_id, threshold, value.
with
-- @include lib/multilabel_cells.sql
,
-- @include lib/multilabel_all.sql
,
-- @include lib/multilabel_counts.sql
select run_id, cast(null as varchar) as group_id, threshold, of1 as value
from overall
