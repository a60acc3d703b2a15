-- TP over the top {k} ranks of each list ({k}: the parameter k, an integer >= 1, or a
-- column of `curve` such as n_pos). Under `grouped` ties, the point (distinct score) whose
-- items straddle rank {k} gives its positives in proportion: TP_k = TP_before + (k -
-- n_before) * d_tp / (d_tp + d_fp). Past the last ranked item TP_k = TP of the whole list.
-- Needs `curve` and `lists`. Defines at_k(run_id, list_id, group_id, n_pos, tp_k).
cut as (
    select run_id, list_id,
           cast(tp - d_tp as double)
             + cast(({k} - (tp + fp - d_tp - d_fp)) * d_tp as double)
               / nullif(cast(d_tp + d_fp as double), 0) as tp_k
    from curve
    where tp + fp - d_tp - d_fp < {k} and {k} <= tp + fp
),
totals as (
    select run_id, list_id, max(tp) as tp_all from curve group by run_id, list_id
),
at_k as (
    select l.run_id, l.list_id, l.group_id, l.n_pos,
           coalesce(c.tp_k, cast(t.tp_all as double), 0.0::double) as tp_k
    from lists l
    left join cut c on c.run_id = l.run_id and c.list_id = l.list_id
    left join totals t on t.run_id = l.run_id and t.list_id = l.list_id
)
