-- Schema 1: runs and ranked lists.
-- runs:   one row per run; (experiment, name) is unique.
-- scores: one row per ranked item; score NULL = not retrieved; label +1 / -1 / 0 (ignored);
--         seq = input order within the run (for the `input` tie policy and for error messages).
-- groups: one row per ranked list with optional n_positives override and slice metadata.
create type task_kind as enum ('verification', 'matching', 'retrieval', 'classification');

create sequence runs_seq start 1;

create table runs (
    run_id      integer primary key default nextval('runs_seq'),
    experiment  varchar not null,
    name        varchar not null,
    created_at  timestamp not null,
    git_commit  varchar,
    params      json not null default '{}',
    tags        varchar[] not null default [],
    notes       varchar,
    unique (experiment, name)
);

create table scores (
    run_id    integer not null,
    task      task_kind not null,
    group_id  varchar,
    item_id   varchar not null,
    score     double,
    label     tinyint not null,
    seq       bigint not null
);

create table groups (
    run_id       integer not null,
    task         task_kind not null,
    group_id     varchar,
    n_positives  integer,
    slices       map(varchar, varchar) not null default map()
);
