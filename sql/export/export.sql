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

-- name: map_list_ids
-- The list ids of an imported run (`_import_ids`: the list_id column of its scores) -> new
-- list ids of this store, from $first on, in their order; its groups rows use the same map.
create or replace temp table _list_map as
select list_id as old_id,
       cast($first + row_number() over (order by list_id) - 1 as integer) as new_id
from (select distinct list_id from _import_ids where list_id is not null);
