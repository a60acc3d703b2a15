-- The rows and the lists of the requested runs and task, shared by every ranking metric.
-- Parameters: $runs integer[]; $task varchar.
-- CTEs it defines:
--   items(run_id, list_id, item_id, score, label, seq): the rows (item_id as text);
--   lists(run_id, list_id, group_id, n_pos, n_neg, n_ret, p_ret, n_scores): one row per list,
--       from its groups row (group_id, the n_positives override) and its list_stats row (the
--       counts ingest stored); n_pos = the +1 labels, or the override; n_neg = the -1
--       labels (retrieved or not); n_ret = the retrieved, non-ignored items; p_ret = the
--       retrieved positives; n_scores = the distinct scores of the retrieved, non-ignored
--       items, or NULL (not counted).
-- list_id is unique across runs, tasks and lists: windows are partitioned by it alone.
items as (
    select s.run_id, s.list_id, s.item_id, s.score, s.label, s.seq
    from scores s
    where list_contains($runs, s.run_id) and s.task = $task
),
lists as (
    -- the counts that ingest stored for each list (sql/lib/list_index.sql): no scan of rows
    select g.run_id, g.list_id, g.group_id, coalesce(g.n_positives, c.n_pos_labels) as n_pos,
           c.n_neg, c.n_ret, c.p_ret, c.n_scores
    from groups g
    join list_stats c on c.list_id = g.list_id
    where list_contains($runs, g.run_id) and g.task = $task
)
