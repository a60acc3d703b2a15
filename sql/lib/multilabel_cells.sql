-- The cells of multi-label classification runs, shared by the multi-label metrics (cp ... of1
-- and their _at_k forms): one row per (image, class) of a run, a class being a list
-- (group_id) and an image an item (item_id) of the classification task.
-- Parameters: $runs integer[]; $task varchar; $thresholds double[].
-- CTEs it defines:
--   cells(run_id, list_id, group_id, item_id, score, label, first_seq): the rows whose label
--       is not 0 (an ignored label counts nowhere and takes no place in an image's top k, as
--       an (image, class) pair without a row); first_seq = the class's first input position;
--   classes(run_id, list_id, group_id, n_g): every class of the runs (lists with rows, even
--       if all are ignored), n_g = its positive labels (ML-GCN's Ng);
--   sweep(threshold): the thresholds, a label is predicted when score >= threshold.
rows_in as (
    select run_id, list_id, group_id, item_id, score, label,
           min(seq) over (partition by list_id) as first_seq
    from scores
    where list_contains($runs, run_id) and task = $task
),
cells as (
    select run_id, list_id, group_id, item_id, score, label, first_seq
    from rows_in
    where label <> 0
),
classes as (
    select run_id, list_id, group_id, sum(case when label = 1 then 1 else 0 end) as n_g
    from rows_in
    group by run_id, list_id, group_id
),
sweep as (
    select unnest($thresholds) as threshold
)
