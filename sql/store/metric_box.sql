-- The sandbox of a user's metric (evalstore/metrics/user.py): an in-memory database of the
-- current schema holding the rows of the runs it computes, with external access off.

-- name: metric_columns
-- The output columns of a user's metric, read when its file is loaded, without rows: {query}
-- is the metric's SQL (its file's text, includes expanded), bound with its parameters.
select * from ({query}) as q limit 0;

-- name: box_tables
-- The box's tables (not views), and whether each is keyed by run_id or by list_id.
-- Output: table_name, by_run, by_list.
select c.table_name,
       bool_or(c.column_name = 'run_id') as by_run,
       bool_or(c.column_name = 'list_id') as by_list
from information_schema.columns c
join duckdb_tables() t on t.table_name = c.table_name and t.schema_name = c.table_schema
where c.table_schema = 'main'
group by c.table_name
order by c.table_name;

-- name: box_rows_of_runs
-- The rows of {table} (quoted from box_tables) of the runs $runs (integer[]).
select * from {table} where list_contains($runs, run_id);

-- name: box_rows_of_lists
-- The rows of {table} (quoted from box_tables) of the lists of the runs $runs (integer[]).
select * from {table}
where list_id in (select list_id from groups where list_contains($runs, run_id));

-- name: box_clear
-- The rows the schema seeds into {table} (quoted from box_tables), before box_fill.
delete from {table};

-- name: box_fill
-- The rows registered as _rows into the box's {table} (quoted from box_tables), by name.
insert into {table} by name select * from _rows;
