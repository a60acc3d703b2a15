-- Schema 8: v_params reads each parameter's key and value from json_each, instead of looking
-- the value up through a JSON path built from the key ('$."' || key || '"'): DuckDB's path
-- syntax cannot spell every key (it read a key holding a backslash as NULL, and failed on
-- one ending in a backslash or holding a backslash before a quote). Keys and values are now
-- exactly what the run stored.

-- v_params: one row per (run, parameter), values as JSON text.
create or replace view v_params as
select r.run_id, r.experiment, r.name, r.experiment || '/' || r.name as run, r.created_at,
       p.key, p.value
from runs r, json_each(r.params) p;
