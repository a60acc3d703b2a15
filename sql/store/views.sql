-- v_runs, rebuilt whenever the set of parameter names changes, and v_groups (see
-- evalstore.db.schema.refresh_views).

-- name: param_types
-- Each parameter name with the type of its v_runs column, from the JSON types its values take
-- across runs: double when they are numbers (BIGINT, UBIGINT, DOUBLE) or null, and one is a
-- number; boolean when they are booleans or null, and one is a boolean; varchar otherwise (a
-- text, a list, an object, a mix, or only nulls).
-- Output: key, type (double | boolean | varchar).
with kinds as (
    select distinct key, json_type(value) as kind from v_params
)
select key,
       case when bool_and(coalesce(kind in ('BIGINT', 'UBIGINT', 'DOUBLE', 'NULL'), false))
                 and bool_or(kind <> 'NULL') then 'double'
            when bool_and(coalesce(kind in ('BOOLEAN', 'NULL'), false))
                 and bool_or(kind <> 'NULL') then 'boolean'
            else 'varchar' end as type
from kinds
group by key
order by key;

-- name: param_keys
-- Every parameter name in use (to check a new run's names against).
select distinct key from v_params order by key;

-- name: params_add_kinds
-- Whether the run $run_id integer (just inserted) gives a parameter name a JSON type that no
-- other run gives it (a new name among them): only then can param_types, and so v_runs,
-- differ from what they were before the run. Output: one row, added (boolean).
select exists (
    select key, json_type(value) from v_params where run_id = $run_id
    except
    select key, json_type(value) from v_params where run_id <> $run_id
) as added;

-- name: v_runs
-- The runs, one typed column param_<name> per parameter name in use. Each value is found by
-- comparing the name with the keys json_each reads from the run's params (never through a
-- JSON path built from the name, which cannot spell every name). {columns} is the list of
-- v_runs_column and {values} the list of v_runs_param, one of each per parameter name (a
-- view cannot take its columns from the data, so refresh_views joins them, with the names in
-- the store quoted there, never taken from a query).
create or replace view v_runs as
select r.run_id, r.experiment, r.name, r.experiment || '/' || r.name as run, r.created_at,
       r.git_commit, r.tags, r.notes, r.params{columns}
from runs r
left join (
    select r.run_id{values}
    from runs r, json_each(r.params) j
    group by r.run_id
) p on p.run_id = r.run_id

-- name: v_runs_column
-- One parameter column in v_runs' select list: {column} the quoted column name param_<name>.
, p.{column}

-- name: v_runs_param
-- One typed parameter column of v_runs' parameters: {key} the name (a string literal), {type}
-- the type param_types gives (double | boolean | varchar), {column} the quoted column name
-- param_<name>. A JSON null reads as NULL, a string as its text, a list or object as its JSON
-- text.
, cast(first(j.value ->> '$') filter (where j.key = {key}) as {type}) as {column}

-- name: v_groups
-- v_groups: compare/groups with the seed parameter 'seed', grouping on every other
-- parameter (a view binds no parameters: both are written here as constants).
create or replace view v_groups as
with configs as (
-- @include lib/configurations.sql seed='seed' keys=NULL
),
-- @include lib/configuration_stats.sql
