-- TP over the top {k} ranks of each list ({k}: the parameter k, an integer >= 1, or a
-- column of `lists` l such as l.n_pos). Under `grouped` ties, the point (distinct score)
-- whose items straddle rank {k} gives its positives in proportion: TP_k = TP_before +
-- (k - n_before) * d_tp / (d_tp + d_fp), n_before = TP + FP before it. When no point
-- straddles {k} (the list is shorter), TP_k = TP of the whole list; 0 without points.
-- Needs `curve` and `lists`. Defines at_k(run_id, list_id, group_id, n_pos, tp_k).
at_k as (
    select l.run_id, l.list_id, l.group_id, l.n_pos,
           coalesce(max(case when c.tp + c.fp - c.d_tp - c.d_fp < {k} and {k} <= c.tp + c.fp
                             then cast(c.tp - c.d_tp as double)
                                  + cast(({k} - (c.tp + c.fp - c.d_tp - c.d_fp)) * c.d_tp as double)
                                    / nullif(cast(c.d_tp + c.d_fp as double), 0) end),
                    cast(max(c.tp) as double), 0.0::double) as tp_k
    from lists l
    left join curve c on c.list_id = l.list_id
    group by l.run_id, l.list_id, l.group_id, l.n_pos
)
