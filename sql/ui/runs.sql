-- Queries of the live UI (evalstore ui): the runs page.

-- name: run_values
-- The headline values of the runs $runs (integer[]), one row per run and column, as the
-- runs page shows them beside each run (and, averaged over a configuration's runs, beside
-- each configuration). `column` is the leaderboard's column name: task, metric and the
-- sweep value (`keypoints precision_at_sigma@3`).
-- Output: run_id, column, task, base_metric, value.
select v.run_id,
       cast(v.task as varchar) || ' ' || v.metric
           || coalesce('@' || format('{:g}', cast(coalesce(v.params ->> 'sigma',
                                                           v.params ->> 'threshold',
                                                           v.params ->> 'eps') as double)), '')
           as "column",
       cast(v.task as varchar) as task, v.base_metric, v.value
from v_metrics v
where list_contains($runs, v.run_id) and (
-- @include lib/headline.sql
)
order by case v.task when 'verification' then 1 when 'matching' then 2 when 'retrieval' then 3
                     when 'classification' then 4 when 'keypoints' then 5 else 6 end,
         "column", v.run_id;

-- name: run_count
-- How many runs the store holds, step runs left out (the runs page says how many pass the
-- filters of these).
-- Output: n.
select count(*) as n from runs where run_id not in (select step_run_id from run_steps);

-- name: step_run_ids
-- The ids of the step runs (run_steps: a run's evaluation at a training step), which the
-- runs page and the pickers leave out.
-- Output: step_run_id.
select step_run_id from run_steps order by step_run_id;
