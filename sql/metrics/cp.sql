-- cp: CP, ML-GCN's per-class precision averaged over the classes: sum over classes of Nc /
-- Np (Np = 1 where no label of the class is predicted) / C, of the labels whose score is >=
-- the threshold (ML-GCN's overall: 0 on logits). Reference: megvii-research/ML-GCN util.py
-- @ 311f521031b91c59a8bd65a1afe3e6cf9a97916a, AveragePrecisionMeter.evaluation. Rows: the
-- run's CP (group_id NULL) and each class's precision Nc / Np, at each threshold.
-- Parameters: $runs integer[], $task varchar, $thresholds double[].
-- Output: run_id, group_id, threshold, value.
with
-- @include lib/multilabel_cells.sql
,
-- @include lib/multilabel_all.sql
,
-- @include lib/multilabel_counts.sql
select run_id, cast(null as varchar) as group_id, threshold, cp as value
from overall
union all
select run_id, group_id, threshold, n_c / nullif(n_p1, 0) as value
from per_class
