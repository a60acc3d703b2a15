-- Shared steps of every ranking metric: the precision/recall points of each ranked list.
-- Included (as CTEs) by sql/metrics/*.sql through `-- @include lib/ranking_points.sql`.
-- Parameters: $runs integer[]; $task varchar; $ties 'grouped' | 'optimistic' | 'pessimistic'
-- | 'input' | 'docid'.
-- CTEs it defines: those of lib/lists.sql (items, lists), and
--   curve(run_id, list_id, group_id, rn, d_tp, d_fp, tp, fp, n_pos, n_neg, prec, rec): one
--       row per point (a distinct score under `grouped`, else one ranked item), rn = 1, 2, ...
--       in ranking order, tp/fp cumulative, prec = tp / (tp + fp), rec = tp / n_pos.
-- @include lib/lists.sql
,
ranked as (
    -- retrieved, non-ignored items with the tie-break keys of the policy:
    -- optimistic puts positives first, pessimistic negatives first, input keeps input order,
    -- docid puts the greater item id (as text, byte order) first, as trec_eval does
    select run_id, list_id, score, label,
           case when $ties = 'optimistic' then -label
                when $ties = 'pessimistic' then label
                else 0 end as k1,
           case when $ties = 'docid' then item_id end as k3,
           case when $ties = 'grouped' then 0 else seq end as k2
    from items
    where label <> 0 and score is not null
),
steps as (
    -- one row per point: under `grouped` all items of one score enter together
    select run_id, list_id, score, k1, k3, k2,
           sum(case when label = 1 then 1 else 0 end) as d_tp,
           sum(case when label = -1 then 1 else 0 end) as d_fp
    from ranked
    group by run_id, list_id, score, k1, k3, k2
),
points as (
    select run_id, list_id, d_tp, d_fp,
           sum(d_tp) over w as tp,
           sum(d_fp) over w as fp,
           row_number() over w as rn
    from steps
    window w as (
        partition by list_id
        order by score desc, k1, k3 desc, k2
        rows between unbounded preceding and current row
    )
),
curve as (
    select p.run_id, p.list_id, l.group_id, p.rn, p.d_tp, p.d_fp, p.tp, p.fp, l.n_pos, l.n_neg,
           cast(p.tp as double) / nullif(cast(p.tp + p.fp as double), 0) as prec,
           cast(p.tp as double) / nullif(cast(l.n_pos as double), 0) as rec
    from points p
    join lists l on l.list_id = p.list_id
)
