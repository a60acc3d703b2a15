-- auc_pr_trapz: area under the precision-recall curve by the trapezoidal rule, from a leading
-- point (R_0, P_0) = (0, 1) (VLFeat vl_pr info.auc; the HPatches Python benchmark's "ap",
-- np.trapz(precision, recall)):
--   AUC = sum_i (R_i - R_{i-1}) * (P_i + P_{i-1}) * 0.5
-- over the points i = 1, 2, ... of lib/ranking_points.sql (a distinct score under `grouped`
-- ties, else a rank in the policy's order). P_i = TP_i / (TP_i + FP_i) exactly (VLFeat and
-- HPatches use max(tp, 1e-10) / max(tp + fp, 1e-10), a difference of at most 5e-11). The
-- curve stops at the last retrieved item: positives not retrieved add no area.
-- P = 0 -> NULL; P > 0 and nothing retrieved -> 0.
-- The trapezoids, doubles in [0, 1] adding up to at most 1, are added by sum_exact: the same
-- bits in any order (docs/metrics.md, "Determinism").
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id, value (one row per list).
with
-- @include lib/ranking_points.sql
,
trapezoids as (
    select run_id, list_id,
           (rec - lag(rec, 1, 0.0::double) over (partition by list_id order by rn))
             * (prec + lag(prec, 1, 1.0::double) over (partition by list_id order by rn))
             * 0.5::double as a
    from curve
),
per_list as (
    select run_id, list_id, sum_exact(a) as s from trapezoids group by run_id, list_id
)
select l.run_id, l.group_id,
       case when l.n_pos = 0 then null else coalesce(p.s, 0.0::double) end as value
from lists l
left join per_list p on p.run_id = l.run_id and p.list_id = l.list_id
