-- Export and import of raw tables (evalstore/scale/). Table and column names cannot be
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
-- list ids of this store, from $first on, in their order; its groups rows use the same map
-- (BIGINT here: export.py checks that they fit an INTEGER before they are used).
create or replace temp table _list_map as
select list_id as old_id, cast(null as varchar) as task, cast(null as varchar) as group_id,
       $first + row_number() over (order by list_id) - 1 as new_id
from (select distinct list_id from _import_ids where list_id is not null);

-- name: map_group_ids
-- As map_list_ids for an export written before schema 6 (no list ids): `_import_ids` holds
-- the task and group_id columns of the run's scores; a list is a (task, group_id).
create or replace temp table _list_map as
select cast(null as integer) as old_id, task, group_id,
       $first + row_number() over (order by task, group_id) - 1 as new_id
from (select distinct task, group_id from _import_ids);

-- name: no_list_map
-- An empty map, for a run whose export has no scores.
create or replace temp table _list_map as
select cast(null as integer) as old_id, cast(null as varchar) as task,
       cast(null as varchar) as group_id, cast(null as integer) as new_id
where false;

-- name: add_list_groups
-- The groups row of each imported list that has none (before schema 6 only lists with
-- metadata had one).
insert into groups (run_id, task, group_id, list_id)
select $run_id, m.task, m.group_id, m.new_id
from _list_map m
where not exists (select 1 from groups g where g.list_id = m.new_id);

-- name: count_mapped_lists
select count(*) as n from _list_map;

-- name: score_kinds
-- Whether every item id of `_import_kinds` (an exported run's scores) is the text of an int32
-- and every score a float32 value: then the run is stored as it was ingested.
select coalesce(bool_and(try_cast(item_id as integer) is not null
                         and cast(try_cast(item_id as integer) as varchar) = item_id), false),
       coalesce(bool_and(score is null
                         or coalesce(cast(try_cast(score as float) as double) = score, false)),
                false)
from _import_kinds;

-- name: select_partition
-- One run's rows of one raw table, as they are exported (export.py streams the result to
-- Parquet). $run_id INTEGER: the run. {table}: the quoted raw table (from TABLES);
-- {columns}: its exported columns but run_id, each a quoted column or a text_column;
-- {order}: empty, or for `scores` (a view whose join may hand rows over in any order)
-- "order by list_id, seq", so that two exports of the same rows are the same bytes.
-- Output: those columns, in that order.
select {columns}
from {table}
where run_id = $run_id
{order};

-- name: text_column
-- A select-list entry of select_partition for a column exported as text (an ENUM, JSON):
-- {column} is the quoted column; the output column keeps its name.
cast({column} as varchar) as {column}

-- name: count_run_rows
-- How many rows of {table} (a quoted raw table, from TABLES) the run $run_id INTEGER has,
-- to tell an out-of-date export (the Spark engine's check). Output: n.
select count(*) as n
from {table}
where run_id = $run_id;
