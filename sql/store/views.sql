-- v_runs, rebuilt whenever the set of parameter names changes (see Store.refresh_views).

-- name: param_types
-- Each parameter name with the JSON types its values take across runs.
select key, list(distinct json_type(value) order by json_type(value)) as types
from v_params
group by key
order by key;
