-- roc_auc_trapz: roc_auc without the closing segment, as the HPatches Python benchmark's
-- roc() computes its verification "auc" (hpatches/hpatches-benchmark python/utils/metrics.py
-- @ cf5f43e2: tpfp() stops at the last retrieved item, `perm = perm[0:stop + 1]`, then
-- np.trapz(tpr, fpr)). The curve runs through (FP_i / N, TP_i / P) from (0, 0) over the
-- points i = 1 .. M of lib/ranking_points.sql and ends there:
--   AUC = sum_i (FP_i - FP_{i-1}) * (TP_i + TP_{i-1}) / (2 P N)
-- (equal to roc_auc when everything is retrieved). N = the -1 labels, retrieved or not.
-- P = 0 or N = 0 -> NULL; nothing retrieved -> 0.
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
            else cast(coalesce(p.s, 0) as double)
                 / nullif(cast(2 * l.n_pos * l.n_neg as double), 0) end as value
from lists l
left join per_list p on p.run_id = l.run_id and p.list_id = l.list_id
