-- What the single-label metrics (top1_accuracy, topk_accuracy, balanced_accuracy, f1_macro,
-- f1_micro, ece; sql/lib/single_label.sql) need of a run's rows, checked before they are
-- computed: each query returns the first offending sample, none when the runs are fit.

-- name: single_label_samples
-- A sample (item) of $runs' $task lists without exactly one +1 label, or absent from a class's
-- list: its run, its id, its +1 labels, the lists holding it and the run's lists.
-- Parameters: $runs integer[], $task varchar.
with lists as (
    select run_id, count(*) as n_lists
    from groups
    where list_contains($runs, run_id) and task = $task and list_id is not null
    group by run_id
),
samples as (
    select run_id, item_id, count(*) as n_rows, count(case when label = 1 then 1 end) as n_pos
    from scores
    where list_contains($runs, run_id) and task = $task
    group by run_id, item_id
)
select r.experiment || '/' || r.name as run, s.item_id, s.n_pos, s.n_rows, l.n_lists
from samples s
join lists l on l.run_id = s.run_id
join runs r on r.run_id = s.run_id
where s.n_pos <> 1 or s.n_rows <> l.n_lists
order by s.run_id, s.item_id
limit 1;

-- name: single_label_probabilities
-- A score of $runs' $task lists that is no probability (NULL, or outside [0, 1]) in a row
-- labelled +1 or -1 (ece reads the scores as probabilities): its run, sample, class, score.
-- Parameters: $runs integer[], $task varchar.
select r.experiment || '/' || r.name as run, s.item_id, s.group_id, s.score
from scores s
join runs r on r.run_id = s.run_id
where list_contains($runs, s.run_id) and s.task = $task and s.label <> 0
  and (s.score is null or s.score < 0 or s.score > 1)
order by s.run_id, s.item_id, s.group_id
limit 1;
