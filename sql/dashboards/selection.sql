-- Which runs the dashboards show: every panel query takes the same two filters,
--   $experiments varchar[] (NULL = every experiment) and $runs integer[] (NULL = every run),
-- and keeps a run when it passes both. Without $runs, step runs (run_steps: a run's
-- evaluation at a training step) are left out; a step run named in $runs is shown.

-- name: selected_runs
-- The runs that pass the filters, oldest first.
-- Parameters: $experiments varchar[], $runs integer[].
-- Output: run_id, run, experiment, created_at.
select run_id, run, experiment, created_at
from v_runs
where ($experiments is null or list_contains($experiments, experiment))
  and (list_contains($runs, run_id)
        or ($runs is null and run_id not in (select step_run_id from run_steps)))
order by created_at, run_id;

-- name: experiments
-- Every experiment with its number of runs, step runs left out (to check an --experiment
-- filter).
-- Output: experiment, n_runs.
select experiment, count(*) filter (where run_id not in (select step_run_id from run_steps))
           as n_runs
from runs
group by experiment
order by experiment;
