-- Export and import of raw tables (evalstore/export.py). Table and column names cannot be
-- bound: export.py takes tables from its fixed allow-list and columns from table_columns.

-- name: table_columns
-- The columns of $table (one of evalstore's raw tables), in order, with their DuckDB types.
select column_name, data_type, is_nullable = 'YES' as nullable
from information_schema.columns
where table_schema = 'main' and table_name = $table
order by ordinal_position;

-- name: all_runs
select run_id, experiment, name from runs order by run_id;

-- name: run_names
-- Experiment and name of each run of $runs.
select run_id, experiment, name from runs where list_contains($runs, run_id) order by run_id;
