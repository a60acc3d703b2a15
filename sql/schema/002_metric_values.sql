-- Schema 2: computed metrics, a cache over the raw rows.
-- metric_values: one row per (run, task, metric, params, slice): the mean over the lists of
--   the slice ('' = all lists), how many lists had a value and how many were left out (no
--   positives). definition_sha = SHA-256 of the SQL text that computed it: when a definition
--   changes, values of the old SHA are stale and `evalstore eval --recompute` rebuilds them.
-- list_values: the per-list values behind them (per query, class or image pair).
create table metric_values (
    run_id          integer not null,
    task            varchar not null,
    metric          varchar not null,
    params          varchar not null,
    slice           varchar not null,
    value           double,
    n_lists         bigint not null,
    n_skipped       bigint not null,
    definition_sha  varchar not null,
    computed_at     timestamp not null,
    primary key (run_id, task, metric, params, slice)
);

create table list_values (
    run_id          integer not null,
    task            varchar not null,
    metric          varchar not null,
    params          varchar not null,
    group_id        varchar,
    value           double,
    definition_sha  varchar not null
);
