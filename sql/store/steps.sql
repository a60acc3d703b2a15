-- Step runs on rm and mv (evalstore.runs.registry.delete_runs, evalstore.runs.edit):
-- run_steps links a run to the run that holds its evaluation at a training step (a step run,
-- named NAME@STEP in the run's experiment); run_state holds a run opened before its rows.
-- (Not named delete_run_*: those run on every replace of a run's rows, registry.delete_run_rows.)

-- name: step_runs_of
-- The step runs of the runs $runs (integer[]).
-- Output: step_run_id.
select step_run_id from run_steps where list_contains($runs, run_id) order by step_run_id;

-- name: step_parents
-- The runs whose step runs are among $runs (integer[]).
-- Output: run_id.
select distinct run_id from run_steps where list_contains($runs, step_run_id) order by run_id;

-- name: run_step_names
-- The step runs of $run_id with their steps, by step.
-- Output: step_run_id, step.
select step_run_id, step from run_steps where run_id = $run_id order by step;

-- name: remove_step_links
-- The run_steps rows of the runs $runs (integer[]), as run or as step run.
delete from run_steps where list_contains($runs, run_id) or list_contains($runs, step_run_id);

-- name: remove_run_states
-- The run_state rows of the runs $runs (integer[]).
delete from run_state where list_contains($runs, run_id);
