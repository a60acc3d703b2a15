-- Logged values (sql/schema/014_logged_values.sql): scalars computed outside evalstore,
-- written by evalstore/logged.py. A NULL step is a value logged without one.

-- name: delete_run_logged_values
-- Deleting a run deletes its logged values (store/delete_run_* run on rm and --replace).
delete from logged_values where run_id = $run_id;

-- name: logged_names
-- Every metric name logged in the store, in order.
select distinct metric from logged_values order by metric;

-- name: logged_steps
-- How run $run_id logs $metric: rows, how many with a step, the first and last step.
select count(*) as n, count(step) as n_steps, min(step) as first_step, max(step) as last_step
from logged_values
where run_id = $run_id and metric = $metric;

-- name: logged_value_at
-- The value of $metric of run $run_id at $step (NULL: the value logged without a step).
select value from logged_values
where run_id = $run_id and metric = $metric and step is not distinct from $step;

-- name: delete_logged_value
delete from logged_values
where run_id = $run_id and metric = $metric and step is not distinct from $step;

-- name: insert_logged_value
-- $run_id integer, $metric varchar, $step bigint or NULL, $value double, $logged_at timestamp.
insert into logged_values (run_id, metric, step, value, logged_at)
values ($run_id, $metric, $step, $value, $logged_at);

-- name: logged_latest
-- The latest value (at the last step, or the one logged without a step) of each logged
-- metric of the runs $runs (integer[], NULL = all) among $metrics (varchar[], NULL = all).
-- Output: run, run_id, experiment, created_at, metric, step, value, n_steps, logged_at.
select run, run_id, experiment, created_at, metric, step, value,
       count(step) over (partition by run_id, metric) as n_steps, logged_at
from v_logged
where ($runs is null or list_contains($runs, run_id))
  and ($metrics is null or list_contains($metrics, metric))
qualify row_number() over (partition by run_id, metric order by step desc nulls last) = 1
order by run_id, metric;

-- name: logged_history
-- $metric's latest value per run over time (created_at) for the runs of $experiment (NULL =
-- all). Output: run, run_id, experiment, created_at, metric, step, value, n_steps.
select run, run_id, experiment, created_at, metric, step, value,
       count(step) over (partition by run_id) as n_steps
from v_logged
where metric = $metric and ($experiment is null or experiment = $experiment)
qualify row_number() over (partition by run_id order by step desc nulls last) = 1
order by experiment, created_at, run_id;
