-- ap: non-interpolated average precision of each ranked list.
--   AP = sum over points t of (TP_t - TP_{t-1}) / P * P_t   (VLFeat vl_pr info.ap; with
--   `grouped` ties equal to scikit-learn's average_precision_score). P = 0 -> NULL.
-- Each retrieved positive adds P_t / P, P_t = TP / (TP + FP) over the items ranked at or
-- above it. Three ways to the same points, chosen by the data:
--   (a) `grouped` ties, many tied scores: merge each tie into one point, then one window;
--   (b) `grouped` ties, few tied scores: one row per item, a RANGE frame counts its peers;
--   (c) `optimistic`, `pessimistic`, `input`: one point per rank, in the policy's order.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id, value (one row per list).
with
items as (
    select s.run_id, s.group_id, s.score, s.label, s.seq
    from scores s
    where list_contains($runs, s.run_id) and s.task = $task
),
label_counts as (
    select run_id, group_id,
           sum(case when label = 1 then 1 else 0 end) as n_pos_labels
    from items
    group by run_id, group_id
),
lists as (
    select c.run_id, c.group_id, coalesce(g.n_positives, c.n_pos_labels) as n_pos
    from label_counts c
    left join groups g
      on g.run_id = c.run_id and g.task = $task and g.group_id is not distinct from c.group_id
),
ranked as (
    select run_id, group_id, score, label, seq
    from items
    where label <> 0 and score is not null
),
shape as (
    -- grouped ties and at least 2 rows per distinct (list, score) on average (HyperLogLog
    -- estimate, one cheap pass): merge each tie group into one row before the window
    select $ties = 'grouped'
           and count(*) >= 2 * approx_count_distinct(hash(run_id, group_id, score)) as merge_ties
    from ranked
),
terms as (
    -- (a) grouped, many ties: one row per distinct score, d_tp * P_t
    select run_id, group_id,
           cast(d_tp as double) * (cast(sum(d_tp) over w as double)
                                   / nullif(cast(sum(d_n) over w as double), 0)) as term,
           d_tp
    from (
        select run_id, group_id, score,
               sum(case when label = 1 then 1 else 0 end) as d_tp, count(*) as d_n
        from ranked
        where (select merge_ties from shape)
        group by run_id, group_id, score
    )
    window w as (partition by run_id, group_id order by score desc
                 rows between unbounded preceding and current row)
    union all
    -- (b) grouped, few ties: every row; the RANGE frame counts a row's equal-score peers,
    -- so each positive gets the precision of its tie group's point
    select run_id, group_id,
           cast(sum(case when label = 1 then 1 else 0 end) over w as double)
             / nullif(cast(count(*) over w as double), 0) as term,
           case when label = 1 then 1 else 0 end as d_tp
    from ranked
    where $ties = 'grouped' and not (select merge_ties from shape)
    window w as (partition by run_id, group_id order by score desc
                 range between unbounded preceding and current row)
    union all
    -- (c) optimistic / pessimistic / input: one point per row, in score, policy, input order
    select run_id, group_id,
           cast(sum(case when label = 1 then 1 else 0 end) over w as double)
             / nullif(cast(row_number() over w as double), 0) as term,
           case when label = 1 then 1 else 0 end as d_tp
    from ranked
    where $ties <> 'grouped'
    window w as (partition by run_id, group_id
                 order by score desc,
                          case when $ties = 'optimistic' then -label
                               when $ties = 'pessimistic' then label else 0 end,
                          seq
                 rows between unbounded preceding and current row)
),
per_list as (
    select run_id, group_id, sum(term) as s
    from terms
    where d_tp > 0
    group by run_id, group_id
)
select l.run_id, l.group_id,
       case when l.n_pos = 0 then null
            else coalesce(p.s, 0.0::double) / nullif(cast(l.n_pos as double), 0) end as value
from lists l
left join per_list p on p.run_id = l.run_id and p.group_id is not distinct from l.group_id
