-- r_precision: precision at rank R = P, the list's number of positives: TP_P / P
-- (trec_eval Rprec); ranks past the end of the list count as misses. Ties as in
-- lib/tp_at_k.sql (a tie group cut at rank P gives its positives in proportion). P = 0 ->
-- NULL.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id, value (one row per list).
with
-- @include lib/ranking_points.sql
,
cut as (
    select run_id, list_id,
           cast(tp - d_tp as double)
             + cast((n_pos - (tp + fp - d_tp - d_fp)) * d_tp as double)
               / nullif(cast(d_tp + d_fp as double), 0) as tp_r
    from curve
    where tp + fp - d_tp - d_fp < n_pos and n_pos <= tp + fp
),
totals as (
    select run_id, list_id, max(tp) as tp_all from curve group by run_id, list_id
)
select l.run_id, l.group_id,
       case when l.n_pos = 0 then null
            else coalesce(c.tp_r, cast(t.tp_all as double), 0.0::double)
                 / nullif(cast(l.n_pos as double), 0) end as value
from lists l
left join cut c on c.run_id = l.run_id and c.list_id = l.list_id
left join totals t on t.run_id = l.run_id and t.list_id = l.list_id
