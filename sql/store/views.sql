-- v_runs, rebuilt whenever the set of parameter names changes (see evalstore.schema.refresh_views).

-- name: param_types
-- Each parameter name with the JSON types its values take across runs.
select key, list(distinct json_type(value) order by json_type(value)) as types
from v_params
group by key
order by key;

-- name: v_runs
-- The runs, one typed column param_<name> per parameter name in use: {params} is the list
-- of those columns, each ",\n       cast(params ->> '$."name"' as TYPE) as \"param_name\"",
-- built by refresh_views from the names in the store (quoted there, never from a query).
create or replace view v_runs as
select run_id, experiment, name, experiment || '/' || name as run, created_at,
       git_commit, tags, notes, params{params}
from runs

-- name: v_runs_param
-- One typed parameter column of v_runs: {path} the JSON path of the name (a literal), {type}
-- double | boolean | varchar, {column} the quoted column name param_<name>.
cast(params ->> {path} as {type}) as {column}
