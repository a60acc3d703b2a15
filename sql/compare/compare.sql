-- Paired comparison of two runs over the lists they were both scored on.

-- name: paired_lists
-- Per list of $task: the value of $metric (with $params) in run $a and in run $b.
-- Output: group_id, a, b, diff (= b - a); lists where either value is NULL (no positives)
-- are kept with a NULL diff.
select coalesce(x.group_id, y.group_id) as group_id, x.value as a, y.value as b,
       y.value - x.value as diff
from (select group_id, value from list_values
       where run_id = $a and task = $task and metric = $metric and params = $params) x
join (select group_id, value from list_values
       where run_id = $b and task = $task and metric = $metric and params = $params) y
  on x.group_id is not distinct from y.group_id
order by 1;

-- name: unmatched_lists
-- How many lists of $task/$metric/$params one run has and the other has not.
with x as (
    select group_id from list_values
    where run_id = $a and task = $task and metric = $metric and params = $params
),
y as (
    select group_id from list_values
    where run_id = $b and task = $task and metric = $metric and params = $params
)
select (select count(*) from x where not exists
           (select 1 from y where y.group_id is not distinct from x.group_id)) as only_a,
       (select count(*) from y where not exists
           (select 1 from x where x.group_id is not distinct from y.group_id)) as only_b;

-- name: overall
-- The stored means (slice '') of runs $runs, with their display names.
select run_id, task, metric, label, params, value, n_lists
from metric_values
where list_contains($runs, run_id) and slice = ''
order by task, metric, params;

-- name: history
-- $metric (display or registry name) over time for the runs of $experiment (NULL = all),
-- step runs left out (a run's value is its last step's, mirrored under its own id).
select m.run, m.run_id, m.experiment, m.created_at, m.task, m.metric, m.base_metric, m.params,
       m.value, m.n_lists
from v_metrics m
where (m.metric = $metric or m.base_metric = $metric) and m.slice = ''
  and ($experiment is null or m.experiment = $experiment)
  and m.run_id not in (select step_run_id from run_steps)
order by m.experiment, m.task, m.params, m.created_at, m.run_id;

-- name: experiment_runs
-- The runs of $experiment (NULL = all) but step runs (groups and history evaluate these).
select run_id from runs
where ($experiment is null or experiment = $experiment)
  and run_id not in (select step_run_id from run_steps)
order by run_id;

-- name: run_params
-- The params (JSON text) of the runs of $experiment (NULL = all).
select run_id, cast(params as varchar) as params
from runs
where ($experiment is null or experiment = $experiment)
order by run_id;

-- name: overall_all
-- Every stored overall value (slice ''), with its run's display name.
select m.run_id, r.experiment || '/' || r.name as run, cast(m.task as varchar) as task,
       m.label as metric, m.params, m.value
from metric_values m
join runs r on r.run_id = m.run_id
where m.slice = '';

-- name: unit_lists
-- The per-list values of $metric ($params) of task $task for the runs $runs.
-- Output: run_id, group_id, value.
select run_id, group_id, value
from list_values
where list_contains($runs, run_id) and task = $task and metric = $metric and params = $params
order by run_id, group_id;

-- name: unit_items
-- The ranked items of task $task of the runs $runs, for resampling items within lists.
-- Output: run_id, group_id, item_id, seq, score, label, in no stated order: the caller puts
-- them in (run_id, group_id, seq) order (pairing.in_list_order: as stored where they are,
-- else sorted; an ORDER BY here was half of the read at 2.4e6 rows).
select run_id, group_id, item_id, seq, score, label
from scores
where list_contains($runs, run_id) and task = $task;

-- name: unit_positives
-- The lists of task $task whose number of positives was given (groups.n_positives).
-- Output: run_id, group_id, n_positives.
select run_id, group_id, n_positives
from groups
where list_contains($runs, run_id) and task = $task and n_positives is not null;
