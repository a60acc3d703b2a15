-- ap: non-interpolated average precision of each ranked list, under `grouped` ties:
--   AP = sum over points t of (TP_t - TP_{t-1}) / P * P_t   (scikit-learn's
--   average_precision_score; VLFeat vl_pr info.ap), P = 0 -> NULL,
-- that is (1/P) * sum over the retrieved positives of P_t = TP / (TP + FP) at the point where
-- the positive enters: the end of its tie group. Ingest stored that point of each retrieved
-- positive (positive_ranks, sql/lib/list_index.sql: tp = TP, n = TP + FP), so AP is an
-- aggregate, with no sort. The other tie policies rank one item at a time: ap_ranked.sql (the
-- registry, evalstore/metrics/registry.py, chooses the file by tie policy).
-- Parameters: $runs integer[], $task varchar.
-- Output: run_id, group_id, value (one row per list).
with
-- @include lib/lists.sql
,
per_list as (
    select p.list_id, sum_exact(cast(p.tp as double) / nullif(cast(p.n as double), 0)) as s
    from positive_ranks p
    join lists l on l.list_id = p.list_id
    group by p.list_id
)
select l.run_id, l.group_id,
       case when l.n_pos = 0 then null
            else coalesce(p.s, 0.0::double) / nullif(cast(l.n_pos as double), 0) end as value
from lists l
left join per_list p on p.list_id = l.list_id
