-- Runs: create, find, list, tag, remove.

-- name: insert_run
-- $experiment, $name: varchar; $created_at: timestamp; $git_commit, $notes: varchar or null;
-- $params: json text; $tags: varchar[]. Returns the new run_id.
insert into runs (experiment, name, created_at, git_commit, params, tags, notes)
values ($experiment, $name, $created_at, $git_commit, $params::json, $tags, $notes)
returning run_id;

-- name: find_runs
-- Candidates for each run reference of $refs varchar[]: 'EXPERIMENT/NAME', 'NAME' or the
-- numeric id. Output: ref, run_id, experiment, name, how ('path' | 'name' | 'id').
with refs as (select unnest($refs) as ref)
select f.ref, r.run_id, r.experiment, r.name,
       case when r.experiment || '/' || r.name = f.ref then 'path'
            when r.name = f.ref then 'name'
            else 'id' end as how
from refs f
join runs r
  on r.experiment || '/' || r.name = f.ref
  or r.name = f.ref
  or cast(r.run_id as varchar) = f.ref
  or 'id:' || cast(r.run_id as varchar) = f.ref
order by r.run_id;

-- name: run_by_name
select run_id from runs where experiment = $experiment and name = $name;

-- name: get_run
-- One run with its per-task row and list counts. Output: the runs columns plus tasks
-- (a list of {task, rows, lists}), its run_state columns (NULL: a run made by an ingest) and
-- steps (how many step evaluations it has: run_steps).
with per_task as (
    select cast(g.task as varchar) as task, cast(sum(c.n_rows) as bigint) as n, count(*) as lists
    from groups g join list_stats c on c.list_id = g.list_id  -- counts stored by ingest
    where g.run_id = $run_id and g.task <> 'detection'  -- those lists are made from the boxes
    group by g.task
    union all
    select 'keypoints', (select count(*) from matches where run_id = $run_id), count(*)
    from pairs where run_id = $run_id having count(*) > 0
    union all
    select 'outcomes', count(*), count(*) from outcomes where run_id = $run_id having count(*) > 0
    union all  -- detections: rows are the detections, lists the images
    select 'detection', (select count(*) from det_boxes where run_id = $run_id), count(*)
    from det_images where run_id = $run_id having count(*) > 0
)
select r.run_id, r.experiment, r.name, r.created_at, r.git_commit, r.params, r.tags, r.notes,
       (select list({'task': p.task, 'rows': p.n, 'lists': p.lists} order by p.task)
          from per_task p) as tasks,
       s.status, s.pid, s.host, s.started_at, s.heartbeat_at, s.finished_at,
       (select count(*) from run_steps t where t.run_id = r.run_id) as steps
from runs r
left join run_state s on s.run_id = r.run_id  -- none: a run made by an ingest
where r.run_id = $run_id;

-- name: list_runs
-- $experiment: varchar or null (all); $tag: varchar or null (any); $commit: a git commit or
-- a prefix of one, or null; $ids: integer[] or null (the runs a --where predicate kept);
-- $limit: integer or null; $step_runs: boolean, false to leave out the step runs
-- (run_steps.step_run_id, NAME@STEP: a run's evaluations at training steps).
-- Output: run_id, experiment, name, created_at, git_commit, tags, params, notes, tasks,
-- n_rows, status (run_state's; 'finished' without a row), steps (the run's step
-- evaluations), and state_pid, state_host, state_heartbeat, from which Python tells a
-- crashed run (evalstore/runs/liveness.py) before dropping them.
with per_task as (
    select g.run_id, cast(g.task as varchar) as task, cast(sum(c.n_rows) as bigint) as n
    from groups g join list_stats c on c.list_id = g.list_id  -- counts stored by ingest
    where g.task <> 'detection'  -- a detection run's lists are made from its boxes
    group by all
    union all
    select run_id, 'keypoints', count(*) from matches group by run_id
    union all
    select run_id, 'keypoints', 0 from pairs group by run_id
    union all
    select run_id, 'outcomes', count(*) from outcomes group by run_id
    union all
    select run_id, 'detection', count(*) from det_boxes group by run_id
    union all
    select run_id, 'detection', 0 from det_images group by run_id
),
counts as (
    select run_id, string_agg(distinct task, ',' order by task) as tasks,
           cast(sum(n) as bigint) as n_rows
    from per_task
    group by run_id
),
steps as (select run_id, count(*) as n from run_steps group by run_id)
select r.run_id, r.experiment, r.name, r.created_at, r.git_commit, r.tags, r.params, r.notes,
       coalesce(c.tasks, '') as tasks, coalesce(c.n_rows, 0) as n_rows,
       coalesce(s.status, 'finished') as status, coalesce(t.n, 0) as steps,
       s.pid as state_pid, s.host as state_host, s.heartbeat_at as state_heartbeat
from runs r
left join counts c on c.run_id = r.run_id
left join run_state s on s.run_id = r.run_id
left join steps t on t.run_id = r.run_id
where ($step_runs or r.run_id not in (select step_run_id from run_steps))  -- NAME@STEP
  and ($experiment is null or r.experiment = $experiment)
  and ($tag is null or list_contains(r.tags, $tag))
  and ($commit is null or starts_with(r.git_commit, $commit))
  and ($ids is null or list_contains($ids, r.run_id))
order by
    case when $sort = 'created_at' then epoch(r.created_at) end desc nulls last,
    case when $sort = 'name' then r.experiment || '/' || r.name end asc nulls last,
    case when $sort = 'id' then r.run_id end asc nulls last,
    r.run_id desc
limit coalesce($limit, 1000000000);

-- name: set_tags
update runs set tags = $tags where run_id = $run_id;

-- name: delete_list_rows
-- The ranked items of $run_id in one row table ({rows}); before its groups rows go.
delete from {rows}
where list_id in (select list_id from groups where run_id = $run_id and list_id is not null);

-- name: delete_run_groups
delete from groups where run_id = $run_id;

-- name: delete_run
delete from runs where run_id = $run_id;

-- name: run_tasks
-- The tasks of $run_id's ingested ranked lists (not a detection run's, made from its boxes).
select distinct cast(task as varchar) as task from groups
where run_id = $run_id and list_id is not null and task <> 'detection' order by 1;

-- name: experiment_run_ids
-- The ids of the runs of $experiment varchar, oldest first.
select run_id from runs where experiment = $experiment order by created_at, run_id;

-- name: rename_run
-- $run_id: the run; $experiment, $name: its new experiment and name (checked free).
update runs set experiment = $experiment, name = $name where run_id = $run_id;

-- name: set_run_notes
update runs set notes = $notes where run_id = $run_id;

-- name: set_run_params
-- $params: the whole new parameter object, as JSON text.
update runs set params = $params::json where run_id = $run_id;

-- name: runs_where
-- {predicate}: the user's --where text, run in the sandbox (evalstore/selection.py).
select run_id from v_runs where ({predicate})

-- name: run_names
-- Every run's (experiment, name), for a "did you mean" when a reference matches none.
select experiment, name from runs order by experiment, name;

-- name: run_tags
-- The tags of $run_id.
select tags from runs where run_id = $run_id;

-- name: update_run
-- A replaced run's runs row, its id kept: $experiment, $name, $created_at, $git_commit,
-- $params (json text), $tags (varchar[]), $notes as insert_run's.
update runs
set experiment = $experiment, name = $name, created_at = $created_at,
    git_commit = $git_commit, params = $params::json, tags = $tags, notes = $notes
where run_id = $run_id;
