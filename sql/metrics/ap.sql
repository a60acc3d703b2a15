-- ap: non-interpolated average precision of each ranked list.
--   AP = sum over points t of (TP_t - TP_{t-1}) / P * P_t   (VLFeat vl_pr info.ap; with
--   `grouped` ties equal to scikit-learn's average_precision_score). P = 0 -> NULL.
-- Computed per retrieved positive: each adds P_t / P, where P_t = TP / (TP + FP) counted over
-- every item ranked at or above it; under `grouped` ties the whole tie counts (the frame's
-- peers), under the other policies the tie-break keys make every rank distinct. The
-- cumulative counts run over one global order (list after list) minus each list's offset:
-- cheaper than a window partitioned by list.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id, value (one row per list).
with
items as (
    -- the rows of the requested runs and task
    select s.run_id, s.group_id, s.score, s.label, s.seq
    from scores s
    where list_contains($runs, s.run_id) and s.task = $task
),
label_counts as (
    select run_id, group_id, sum(case when label = 1 then 1 else 0 end) as n_pos_labels
    from items
    group by run_id, group_id
),
lists as (
    -- one row per list, with the n_positives override of the groups table when given
    select c.run_id, c.group_id, coalesce(g.n_positives, c.n_pos_labels) as n_pos
    from label_counts c
    left join groups g
      on g.run_id = c.run_id and g.task = $task and g.group_id is not distinct from c.group_id
),
ranked as (
    -- retrieved, non-ignored items with the tie-break keys of the policy
    select run_id, group_id, score, label,
           case when $ties = 'optimistic' then -label
                when $ties = 'pessimistic' then label
                else 0 end as k1,
           case when $ties = 'grouped' then 0 else seq end as k2
    from items
    where label <> 0 and score is not null
),
list_sizes as (
    select run_id, group_id, count(*) as n_list,
           sum(case when label = 1 then 1 else 0 end) as tp_list
    from ranked
    group by run_id, group_id
),
offsets as (
    -- ranked items and positives of the lists before each list in the global order
    select run_id, group_id,
           coalesce(sum(n_list) over o, 0) as n_before,
           coalesce(sum(tp_list) over o, 0) as tp_before
    from list_sizes
    window o as (order by run_id, group_id rows between unbounded preceding and 1 preceding)
),
cumulative as (
    select run_id, group_id, label,
           sum(case when label = 1 then 1 else 0 end) over w as tp_all,
           count(*) over w as n_all
    from ranked
    window w as (
        order by run_id, group_id, score desc, k1, k2
        range between unbounded preceding and current row
    )
),
per_list as (
    select c.run_id, c.group_id,
           sum(cast(c.tp_all - o.tp_before as double)
               / nullif(cast(c.n_all - o.n_before as double), 0)) as s
    from cumulative c
    join offsets o on o.run_id = c.run_id and o.group_id is not distinct from c.group_id
    where c.label = 1
    group by c.run_id, c.group_id
)
select l.run_id, l.group_id,
       case when l.n_pos = 0 then null
            else coalesce(p.s, 0.0::double) / nullif(cast(l.n_pos as double), 0) end as value
from lists l
left join per_list p on p.run_id = l.run_id and p.group_id is not distinct from l.group_id
