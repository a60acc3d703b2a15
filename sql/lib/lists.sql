-- The rows and the lists of the requested runs and task, shared by every ranking metric.
-- Parameters: $runs integer[]; $task varchar.
-- CTEs it defines:
--   items(run_id, list_id, item_id, score, label, seq): the rows (item_id as text);
--   lists(run_id, list_id, group_id, n_pos, n_neg, n_ret, p_ret): one row per list (groups
--       has a row per list: its group_id and n_positives override); n_pos = the +1 labels, or
--       the override; n_neg = the -1 labels (retrieved or not); n_ret = the retrieved,
--       non-ignored items; p_ret = the retrieved positives.
-- list_id is unique across runs, tasks and lists: windows are partitioned by it alone.
items as (
    select s.run_id, s.list_id, s.item_id, s.score, s.label, s.seq
    from scores s
    where list_contains($runs, s.run_id) and s.task = $task
),
label_counts as (
    select run_id, list_id,
           sum(case when label = 1 then 1 else 0 end) as n_pos_labels,
           sum(case when label = -1 then 1 else 0 end) as n_neg,
           sum(case when label <> 0 and score is not null then 1 else 0 end) as n_ret,
           sum(case when label = 1 and score is not null then 1 else 0 end) as p_ret
    from items
    group by run_id, list_id
),
lists as (
    select c.run_id, c.list_id, g.group_id, coalesce(g.n_positives, c.n_pos_labels) as n_pos,
           c.n_neg, c.n_ret, c.p_ret
    from label_counts c
    join groups g on g.list_id = c.list_id
)
