-- Runs opened from a training loop (sql/schema/022_training_runs.sql: run_state), and the
-- batches of values a Run logs (logged_values, schema 14), written by evalstore/runs/live.py.

-- name: open_run_state
-- A run opened (or reopened: resume) by the process $pid (NULL: none) on $host at $now:
-- running, its start kept when it had one.
insert into run_state (run_id, status, pid, host, started_at, heartbeat_at, finished_at)
values ($run_id, 'running', $pid, $host, $now, $now, null)
on conflict (run_id) do update set
    status = 'running', pid = excluded.pid, host = excluded.host,
    heartbeat_at = excluded.heartbeat_at, finished_at = null;

-- name: run_state
-- The state of $run_id: no row for a run made by an ingest.
select status, pid, host, started_at, heartbeat_at, finished_at
from run_state where run_id = $run_id;

-- name: finish_run_state
-- $status: 'finished' or 'failed', at $now.
update run_state set status = $status, finished_at = $now, heartbeat_at = $now
where run_id = $run_id;

-- name: touch_run_state
-- A sign of life of a running $run_id at $now (a flush, a heartbeat, `evalstore log`).
update run_state set heartbeat_at = $now where run_id = $run_id and status = 'running';

-- name: run_logged_shape
-- How $run_id logs each of its metrics: with how many steps (0: without), the last step.
select metric, count(step) as n_steps, max(step) as last_step
from logged_values where run_id = $run_id group by metric order by metric;

-- name: delete_batch_values
-- The values of $run_id at the (metric, step) keys of a batch ($metrics varchar[] and
-- $steps bigint[], zipped), which the batch replaces.
delete from logged_values l
using (select unnest($metrics) as metric, unnest($steps) as step) b
where l.run_id = $run_id and l.metric = b.metric and l.step = b.step;

-- name: insert_batch_values
-- A batch of values of $run_id: $metrics varchar[], $steps bigint[], $values double[]
-- (zipped), logged at $now.
insert into logged_values (run_id, metric, step, value, logged_at)
select $run_id, unnest($metrics), unnest($steps), unnest($values), $now;
