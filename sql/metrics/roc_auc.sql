-- roc_auc: area under the ROC curve by the trapezoidal rule (scikit-learn roc_auc_score with
-- `grouped` ties: tied items enter together, so a tied (positive, negative) pair counts 1/2).
-- The curve runs through (FP_i / N, TP_i / P) from (0, 0) over the points i = 1 .. M of
-- lib/ranking_points.sql (a distinct score under `grouped`, else a rank in the policy's
-- order) and is closed by (1, 1): everything not retrieved (and the positives counted only by
-- groups.n_positives) ranks below every retrieved item, all tied, under every policy.
-- N = the -1 labels, retrieved or not. In integers, exactly:
--   AUC = [sum_i (FP_i - FP_{i-1}) * (TP_i + TP_{i-1}) + (N - FP_M) * (TP_M + P)] / (2 P N)
-- with (FP_M, TP_M) = (n_ret - p_ret, p_ret) the retrieved items. P = 0 or N = 0 -> NULL;
-- nothing retrieved -> 0.5.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id, value (one row per list).
with
-- @include lib/ranking_points.sql
,
per_list as (
    select run_id, list_id, sum(d_fp * (2 * tp - d_tp)) as s
    from curve
    group by run_id, list_id
)
select l.run_id, l.group_id,
       case when l.n_pos = 0 or l.n_neg = 0 then null
            else cast(coalesce(p.s, 0) + (l.n_neg - (l.n_ret - l.p_ret)) * (l.p_ret + l.n_pos)
                      as double)
                 / nullif(cast(2 * l.n_pos * l.n_neg as double), 0) end as value
from lists l
left join per_list p on p.run_id = l.run_id and p.list_id = l.list_id
