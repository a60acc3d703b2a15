-- Import of one run of an export folder (evalstore/scale/importer.py). `_import` is the
-- Parquet file of one (table, run), registered as a view; `_list_map` maps the run's old list
-- ids (or, before schema 6, its (task, group_id)) to new ones (export.sql: map_list_ids).
-- Table and column names cannot be bound: {columns} is a comma-separated list of quoted
-- columns of the manifest that the target table also has (importer.py checks them against
-- table_columns); {source_columns} is the same list of source_column entries.

-- name: import_run_row
-- The runs row of the export, under a new run id. Output: run_id, the new id (one row).
insert into runs ({columns})
select {columns}
from _import
returning run_id;

-- name: import_rows
-- The rows of a table without lists (matches, pairs, outcomes), for the new run $run_id
-- INTEGER. {table}: the quoted table. Output: the number of rows inserted.
insert into {table} (run_id, {columns})
select $run_id, {columns}
from _import;

-- name: import_scores
-- The ranked items of the run into the row table {table} (quoted, one of ROW_TABLES), each
-- list under its new id. Output: the number of rows inserted.
insert into {table} (list_id, item, score, label, seq)
select m.new_id, i.item_id, i.score, i.label, i.seq
from _import i
left join _list_map m on m.old_id = i.list_id;

-- name: import_scores_by_group
-- As import_scores for an export written before schema 6, whose lists have no ids: a list
-- is a (task, group_id).
insert into {table} (list_id, item, score, label, seq)
select m.new_id, i.item_id, i.score, i.label, i.seq
from _import i
left join _list_map m on m.task = i.task and m.group_id is not distinct from i.group_id;

-- name: source_column
-- A column {column} (quoted) of `_import`, named where `_list_map` has one of the same name.
i.{column}

-- name: import_groups
-- The groups rows of the run $run_id INTEGER, each under its list's new id. {columns}: the
-- groups columns but list_id; {source_columns}: the same, each a source_column. Output: the
-- number of rows inserted.
insert into groups (run_id, {columns}, list_id)
select $run_id, {source_columns}, m.new_id
from _import i
left join _list_map m on m.old_id = i.list_id;

-- name: import_groups_by_group
-- As import_groups for an export written before schema 6 (a list is a (task, group_id)).
insert into groups (run_id, {columns}, list_id)
select $run_id, {source_columns}, m.new_id
from _import i
left join _list_map m on m.task = i.task and m.group_id is not distinct from i.group_id;
