-- Each run's configuration (analysis/configurations.py, the view v_groups): the text
-- `key=value, ...` of its grouping parameters (sorted by key; '' when it has none) and its
-- seed (NULL when it has none). config_key is what groups runs: the config, except that a run
-- without the seed parameter is a configuration of its own (runs that record no seed are
-- different models whose params say too little, not seeds of one) unless the parameters to
-- group on are named.
-- Holes, set by the include line: {seed} the seed parameter's name, a varchar ($seed, or the
-- literal 'seed' of v_groups); {keys} NULL (group on every parameter but the seed) or the
-- varchar[] of the parameters to group on ($keys, bound NULL or a list).
-- Output: run_id, experiment, run, name, created_at, config, seed, config_key.
with kv as (
    select r.run_id, j.key, coalesce(j.value ->> '$', 'null') as value
    from runs r, json_each(r.params) j
)
select r.run_id, r.experiment, r.experiment || '/' || r.name as run, r.name, r.created_at,
       coalesce(
           string_agg(kv.key || '=' || kv.value, ', ' order by kv.key) filter (
               where kv.key is not null
                 and case when {keys} is null then kv.key <> {seed}
                          else list_contains({keys}, kv.key) end),
           '') as config,
       max(kv.value) filter (where kv.key = {seed}) as seed,
       case when {keys} is null and max(kv.value) filter (where kv.key = {seed}) is null
            then 'run ' || r.run_id
            else 'config ' || config end as config_key
from runs r
left join kv on kv.run_id = r.run_id
group by r.run_id, r.experiment, r.name, r.created_at
