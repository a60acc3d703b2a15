-- Queries of the live UI (evalstore ui): the History page's values over training steps.
-- A run's evaluation at a training step is a run of its own, its step run (run_steps, named
-- NAME@STEP); a value logged with a step (`evalstore log --step`) is a row of the run itself.

-- name: runs_with_steps
-- The runs among $runs integer[] (NULL: every run) of $experiments varchar[] (NULL: every
-- experiment) that have step runs or values logged with a step.
-- Output: run_id.
select run_id
from (select run_id from run_steps
      union
      select run_id from logged_values where step is not null) s
where ($runs is null or list_contains($runs, run_id))
  and ($experiments is null
       or run_id in (select run_id from runs where list_contains($experiments, experiment)))
order by run_id;

-- name: step_runs
-- The step runs of $runs integer[], by run and step, and whether each has a stored overall
-- value (`evalstore eval` stored one).
-- Output: run_id, run, step, step_run, evaluated.
select s.run_id, r.experiment || '/' || r.name as run, s.step,
       c.experiment || '/' || c.name as step_run,
       exists (select 1 from metric_values m where m.run_id = s.step_run_id and m.slice = '')
           as evaluated
from run_steps s
join runs r on r.run_id = s.run_id
join runs c on c.run_id = s.step_run_id
where list_contains($runs, s.run_id)
order by run, s.step;

-- name: step_values
-- The values of the runs $runs integer[] over their steps: each stored overall value (slice
-- '') of their step runs, at the step run's step, and each value they logged with a step.
-- `series` names them as the overview's metric_history does (task · metric (params), the
-- default tie policy left out; MMA curves left out) and `logged · NAME` a logged value.
-- Output: series, run, run_id, step, value, source ('evaluated' or 'logged').
with computed as (
    select cast(v.task as varchar) as task, v.metric, v.params, s.run_id, s.step, v.value,
-- @include lib/shown_params.sql params=v.params
    from run_steps s
    join v_metrics v on v.run_id = s.step_run_id
    where list_contains($runs, s.run_id) and v.slice = '' and v.base_metric <> 'mma'
),
shown as (
    select c.task || ' · ' || c.metric
               || case when c.shown_params = '' then '' else ' (' || c.shown_params || ')' end
               as series,
           r.experiment || '/' || r.name as run, c.run_id, c.step, c.value,
           'evaluated' as source
    from computed c
    join runs r on r.run_id = c.run_id
    union all
    select 'logged · ' || l.metric as series, r.experiment || '/' || r.name as run, l.run_id,
           l.step, l.value, 'logged' as source
    from logged_values l
    join runs r on r.run_id = l.run_id
    where list_contains($runs, l.run_id) and l.step is not null
)
select series, run, run_id, step, value, source
from shown
order by source, series, run, step;
