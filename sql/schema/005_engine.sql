-- Schema 5: which engine computed each stored value (duckdb, or spark over a Parquet export).
alter table metric_values add column engine varchar default 'duckdb';
update metric_values set engine = 'duckdb';

create or replace view v_metrics as
select r.run_id, r.experiment, r.name, r.experiment || '/' || r.name as run, r.created_at,
       r.tags, r.git_commit, m.task, m.label as metric, m.metric as base_metric, m.params,
       m.slice, m.value, m.n_lists, m.n_skipped, m.definition_sha, m.computed_at, m.engine
from metric_values m
join runs r on r.run_id = m.run_id;
