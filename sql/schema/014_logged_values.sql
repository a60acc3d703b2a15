-- Schema 14: scalar values computed outside evalstore (a training loss, an accuracy), logged
-- with `evalstore log RUN METRIC VALUE [--step N]` or Store.log_metric. They live here only,
-- never in metric_values: they have no per-list values, no definition SHA and are never
-- recomputed, so `eval`, `compare` and `check` never read them as computed values.
--   logged_values: one row per (run, metric, step). step: a training step (>= 0), or NULL for
--     a value logged without one; a metric of a run is logged either with steps or without
--     (evalstore.logged refuses a mix). The unique index keys a NULL step as -1, so that
--     logging (run, metric, step) again replaces its row. logged_at: when it was logged (UTC).
--     Deleting a run deletes its rows (store/delete_run_logged_values).
-- v_logged: every logged value with its run's experiment, name, time and tags.
create table logged_values (
    run_id     integer not null,
    metric     varchar not null,
    step       bigint check (step >= 0),
    value      double not null,
    logged_at  timestamp not null
);
create unique index logged_values_key on logged_values (run_id, metric, coalesce(step, -1));

create view v_logged as
select r.run_id, r.experiment, r.name, r.experiment || '/' || r.name as run, r.created_at,
       r.tags, l.metric, l.step, l.value, l.logged_at
from logged_values l
join runs r on r.run_id = l.run_id;
