-- cf1_at_k: CF1, ML-GCN's 2 CP CR / (CP + CR); not the mean of the classes' F1, of each
-- image's top $k labels whose score is >= the threshold (ML-GCN's overall_topk; ties by
-- $ties, lib/multilabel_topk.sql). Reference: megvii-research/ML-GCN util.py @
-- 311f521031b91c59a8bd65a1afe3e6cf9a97916a, AveragePrecisionMeter.evaluation. Rows: the
-- run's CF1 (group_id NULL) and each class's F1 2 Nc / (Np + Ng) (NULL when both are 0), at
-- each threshold.
-- Parameters: $runs integer[], $task varchar, $thresholds double[], $k integer >= 1, $ties varchar.
-- Output: run_id, group_id, threshold, value.
with
-- @include lib/multilabel_cells.sql
,
-- @include lib/multilabel_topk.sql
,
-- @include lib/multilabel_counts.sql
select run_id, cast(null as varchar) as group_id, threshold, cf1 as value
from overall
union all
select run_id, group_id, threshold, (2.0::double * n_c) / nullif(n_p + n_g, 0) as value
from per_class
