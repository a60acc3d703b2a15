-- Evaluations of runs at training steps (sql/schema/022_training_runs.sql): a step's rows are
-- the rows of its step run NAME@STEP, linked to its run by run_steps. The queries that find a
-- run's steps read only links whose step run exists (a step run removed by itself leaves its
-- link behind until the step is logged again).

-- name: prepare
-- What logging the run $run_id integer at $step bigint needs, in one query: the run's
-- experiment, name, git_commit, params (JSON text) and tags; step_of and at: the run and step
-- it is the evaluation of, if it is a step run; step_run: the id of its step run NAME@STEP if
-- there is one; linked: whether a run_steps row links a run to it at $step.
select r.experiment, r.name, r.git_commit, cast(r.params as varchar) as params, r.tags,
       p.experiment || '/' || p.name as step_of, s.step as at, c.run_id as step_run,
       exists (select 1 from run_steps l where l.run_id = r.run_id and l.step = $step) as linked
from runs r
left join run_steps s on s.step_run_id = r.run_id
left join runs p on p.run_id = s.run_id
left join runs c
  on c.experiment = r.experiment and c.name = r.name || '@' || cast($step as varchar)
where r.run_id = $run_id;

-- name: run_ref
-- EXPERIMENT/NAME of the run $run_id integer. Output: run.
select experiment || '/' || name as run from runs where run_id = $run_id;

-- name: run_tasks
-- The tasks the run $run_id integer holds rows of. Output: task.
select distinct cast(task as varchar) as task from groups
where run_id = $run_id and task <> 'detection'  -- a detection run's lists: made from its boxes
union
select 'keypoints' from pairs where run_id = $run_id
union
select 'outcomes' from outcomes where run_id = $run_id
union
select 'detection' from det_images where run_id = $run_id
order by task;

-- name: step_run
-- The step run of $run_id integer at $step bigint. Output: step_run_id.
select step_run_id from run_steps where run_id = $run_id and step = $step;

-- name: parent_of
-- The run and step whose evaluation the run $run_id integer holds, if it is a step run.
-- Output: run (EXPERIMENT/NAME), step.
select r.experiment || '/' || r.name as run, s.step
from run_steps s
join runs r on r.run_id = s.run_id
where s.step_run_id = $run_id;

-- name: unlink
-- Link the run named $experiment, $name varchar (the step run, made in this transaction) to
-- its run $run_id integer at $step bigint, replacing any older link of that run and step.
delete from run_steps
where (run_id = $run_id and step = $step)
   or step_run_id in (select run_id from runs where experiment = $experiment and name = $name);

-- name: link_insert
-- (after unlink) $run_id integer, $step bigint, $experiment, $name varchar.
insert into run_steps (step_run_id, run_id, step)
select run_id, $run_id, $step from runs where experiment = $experiment and name = $name;

-- name: unmirror_values
-- Drop the values of $run_id integer mirrored from its last step (they are mirrored again by
-- the next evaluation): its metric values...
delete from metric_values where run_id = $run_id;

-- name: unmirror_list_values
-- ... and its per-list values.
delete from list_values where run_id = $run_id;

-- name: last_steps
-- The last step of each run of $runs integer[] that has steps. Output: run_id, step,
-- step_run_id.
select s.run_id, max(s.step) as step, arg_max(s.step_run_id, s.step) as step_run_id
from run_steps s
join runs c on c.run_id = s.step_run_id  -- a link whose step run was removed is none
where list_contains($runs, s.run_id)
group by s.run_id;

-- name: at_step
-- The step run of each run of $runs integer[] at $step bigint. Output: run_id, step,
-- step_run_id.
select s.run_id, s.step, s.step_run_id
from run_steps s
join runs c on c.run_id = s.step_run_id
where list_contains($runs, s.run_id) and s.step = $step;

-- name: runs_with_steps
-- The runs among $runs integer[] that have steps, and their number. Output: run_id, run, n.
select s.run_id, r.experiment || '/' || r.name as run, count(*) as n
from run_steps s
join runs r on r.run_id = s.run_id
where list_contains($runs, s.run_id)
group by s.run_id, r.experiment, r.name;

-- name: all_steps
-- Every step of the runs $runs integer[]. Output: run_id, step, step_run_id (by run, step).
select s.run_id, s.step, s.step_run_id
from run_steps s
join runs c on c.run_id = s.step_run_id
where list_contains($runs, s.run_id)
order by s.run_id, s.step;

-- name: experiment_runs
-- The runs with steps of experiment $experiment varchar (NULL: of every experiment).
-- Output: run_id (by run_id).
select distinct s.run_id
from run_steps s
join runs r on r.run_id = s.run_id
where $experiment is null or r.experiment = $experiment
order by s.run_id;

-- name: labels
-- The run and step of each step run of $runs integer[]. Output: step_run_id, run_id, run,
-- experiment, step.
select s.step_run_id, s.run_id, r.experiment || '/' || r.name as run, r.experiment, s.step
from run_steps s
join runs r on r.run_id = s.run_id
where list_contains($runs, s.step_run_id);

-- name: mirror_values
-- Mirror the metric values of step runs under their runs: $runs integer[] (the runs) and
-- $step_runs integer[] (their step runs, in the same order), of $task, $metric varchar and
-- the parameter sets $params varchar[]. The runs' old values of these are deleted first
-- (unmirror_metric).
insert into metric_values by name
select m.* replace (p.run_id as run_id)
from metric_values m
join (select unnest($runs) as run_id, unnest($step_runs) as step_run_id) p
  on m.run_id = p.step_run_id
where m.task = $task and m.metric = $metric and list_contains($params, m.params);

-- name: mirror_list_values
-- (as mirror_values) the per-list values.
insert into list_values by name
select v.* replace (p.run_id as run_id)
from list_values v
join (select unnest($runs) as run_id, unnest($step_runs) as step_run_id) p
  on v.run_id = p.step_run_id
where v.task = $task and v.metric = $metric and list_contains($params, v.params);

-- name: unmirror_metric
-- Delete the values of $task, $metric varchar under the parameter sets $params varchar[] of
-- the runs $runs integer[], before they are mirrored again.
delete from metric_values
where list_contains($runs, run_id) and task = $task and metric = $metric
  and list_contains($params, params);

-- name: unmirror_list_metric
-- (as unmirror_metric) the per-list values.
delete from list_values
where list_contains($runs, run_id) and task = $task and metric = $metric
  and list_contains($params, params);

-- name: logged_by_step
-- The values of $metric varchar logged at steps for the runs $runs integer[]. Output: run,
-- run_id, step, metric, value (by run, step).
select r.experiment || '/' || r.name as run, r.run_id, l.step, l.metric, l.value
from logged_values l
join runs r on r.run_id = l.run_id
where list_contains($runs, l.run_id) and l.metric = $metric and l.step is not null
order by r.experiment, r.name, l.step;

-- name: logged_runs
-- The runs of experiment $experiment varchar (NULL: every experiment) with values of $metric
-- varchar logged at steps. Output: run_id.
select distinct l.run_id
from logged_values l
join runs r on r.run_id = l.run_id
where ($experiment is null or r.experiment = $experiment) and l.metric = $metric
  and l.step is not null
order by l.run_id;
