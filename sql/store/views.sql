-- v_runs, rebuilt whenever the set of parameter names changes (see evalstore.schema.refresh_views).

-- name: param_types
-- Each parameter name with the JSON types its values take across runs.
select key, list(distinct json_type(value) order by json_type(value)) as types
from v_params
group by key
order by key;

-- name: param_keys
-- Every parameter name in use (to check a new run's names against).
select distinct key from v_params order by key;

-- name: v_runs
-- The runs, one typed column param_<name> per parameter name in use. Each value is found by
-- comparing the name with the keys json_each reads from the run's params (never through a
-- JSON path built from the name, which cannot spell every name). {columns} is the list
-- ", p.\"param_name\"" of those columns and {values} the list ", <v_runs_param>" computing
-- them, both built by refresh_views from the names in the store (quoted there, never from
-- a query).
create or replace view v_runs as
select r.run_id, r.experiment, r.name, r.experiment || '/' || r.name as run, r.created_at,
       r.git_commit, r.tags, r.notes, r.params{columns}
from runs r
left join (
    select r.run_id{values}
    from runs r, json_each(r.params) j
    group by r.run_id
) p on p.run_id = r.run_id

-- name: v_runs_param
-- One typed parameter column of v_runs: {key} the name (a string literal), {type}
-- double | boolean | varchar, {column} the quoted column name param_<name>. A JSON null
-- reads as NULL, a string as its text, a list or object as its JSON text.
cast(first(j.value ->> '$') filter (where j.key = {key}) as {type}) as {column}

-- name: v_groups
-- v_groups: the configurations of sql/compare/groups.sql (seed parameter `seed`), {query}
-- being that query's text.
create or replace view v_groups as
{query}
