-- Schema 22: runs opened before their rows, from a training loop (evalstore.init,
-- Store.start_run, `evalstore run new`), and their evaluations at training steps.
--   run_state: one row per run opened so; a run made by an ingest has none (it is finished
--     when made). status: 'running' until the run is finished, then 'finished', or 'failed'
--     (an exception left its with-block, or finish(status="failed")). A 'running' run whose
--     process is gone is shown as crashed (evalstore.runs.live says how it is told). pid and
--     host: the process that opened it (NULL pid: `evalstore run new` without --pid, a run of
--     shell commands). started_at, heartbeat_at (the last sign of life: a flush of logged
--     values or a heartbeat), finished_at: UTC.
--   run_steps: the evaluation of a run at a training step (Run.log_lists): its rows are the
--     rows of the run step_run_id, named NAME@STEP in the run's experiment, hidden from the
--     lists of runs. One per (run, step); removing the run removes its step runs.
-- v_steps: every step evaluation with its run's and its step run's names.
create table run_state (
    run_id        integer primary key,
    status        varchar not null check (status in ('running', 'finished', 'failed')),
    pid           integer,
    host          varchar,
    started_at    timestamp not null,
    heartbeat_at  timestamp not null,
    finished_at   timestamp
);

create table run_steps (
    step_run_id  integer primary key,
    run_id       integer not null,
    step         bigint not null check (step >= 0),
    unique (run_id, step)
);

create view v_steps as
select r.run_id, r.experiment, r.name, r.experiment || '/' || r.name as run, s.step,
       s.step_run_id, c.experiment || '/' || c.name as step_run, c.created_at
from run_steps s
join runs r on r.run_id = s.run_id
join runs c on c.run_id = s.step_run_id;
