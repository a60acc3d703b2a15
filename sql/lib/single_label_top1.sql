-- The top-1 class of each sample of single-label runs (after lib/single_label.sql, whose CTEs
-- it reads), under $ties: `input` (and `docid`) the first list among those at the top
-- score; `optimistic` the true class where it is at the top, else the first; `pessimistic`
-- the first at the top other than the true class, else the true class; `grouped` each class
-- at the top with weight 1/m (m classes at the top: the expected counts over tie orders).
-- Parameters: $ties varchar.
-- CTEs it defines:
--   tops(run_id, item_id, list_id, weight): the predicted class(es) of each sample;
--   classes(run_id, list_id, group_id, n_true, tp, n_pred): per class list of the runs, its
--       samples, their (expected) correct top-1s, and the (expected) samples predicted as it.
top_rows as (
    select p.run_id, p.item_id, p.list_id as true_list, p.above, c.list_id, c.label
    from placed p
    join candidates c on c.run_id = p.run_id and c.item_id = p.item_id and c.score = p.conf
),
top_stats as (
    select run_id, item_id, true_list, min(above) as above, count(*) as n_top,
           min(list_id) as first_top,
           min(case when label = -1 then list_id end) as first_other
    from top_rows
    group by run_id, item_id, true_list
),
tops as (
    select r.run_id, r.item_id, r.true_list, r.list_id,
           case when $ties = 'grouped' then 1.0::double / nullif(cast(s.n_top as double), 0)
                else 1.0::double end as weight
    from top_rows r
    join top_stats s on s.run_id = r.run_id and s.item_id = r.item_id
    where $ties = 'grouped'
       or r.list_id = case
              when $ties = 'optimistic' and s.above = 0 then s.true_list
              when $ties = 'pessimistic' then coalesce(s.first_other, s.true_list)
              else s.first_top
          end
),
true_counts as (
    select list_id, count(*) as n_true from placed group by list_id
),
predicted as (
    select list_id, sum_exact(weight) as n_pred,
           sum_exact(case when list_id = true_list then weight else 0.0::double end) as tp
    from tops
    group by list_id
),
classes as (
    select l.run_id, l.list_id, l.group_id, coalesce(n.n_true, 0) as n_true,
           coalesce(p.tp, 0.0::double) as tp, coalesce(p.n_pred, 0.0::double) as n_pred
    from class_lists l
    left join true_counts n on n.list_id = l.list_id
    left join predicted p on p.list_id = l.list_id
)
