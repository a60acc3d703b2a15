-- Which runs the dashboards show: every panel query takes the same two filters,
--   $experiments varchar[] (NULL = every experiment) and $runs integer[] (NULL = every run),
-- and keeps a run when it passes both.

-- name: selected_runs
-- The runs that pass the filters, oldest first.
-- Parameters: $experiments varchar[], $runs integer[].
-- Output: run_id, run, experiment, created_at.
select run_id, run, experiment, created_at
from v_runs
where ($experiments is null or list_contains($experiments, experiment))
  and ($runs is null or list_contains($runs, run_id))
order by created_at, run_id;

-- name: experiments
-- Every experiment with its number of runs (to check an --experiment filter).
-- Output: experiment, n_runs.
select experiment, count(*) as n_runs
from runs
group by experiment
order by experiment;
