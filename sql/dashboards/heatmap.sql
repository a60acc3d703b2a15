-- Queries of dashboards/heatmap.toml.

-- name: per_list_values
-- Per-list values (per class, query or image pair) of the ranking metrics, for the (task,
-- metric) combinations with at most 60 lists in a run: a class-by-run grid for
-- classification, query-by-run for small retrieval sets.
-- Parameters: $experiments varchar[], $runs integer[] (NULL = all).
-- Output: series (task · metric), list, run, value, base_metric (the registry name: its
--   direction picks the colour scale of the series).
with chosen as (
    select run_id, run, created_at, task, metric, params, coalesce(group_id, '(all)') as list,
           value, count(*) over (partition by run_id, task, metric, params) as n_lists
    from v_lists
    where metric in ('ap', 'ap_voc07', 'ap_voc10', 'ap_coco')
      and coalesce(params ->> 'ties', 'grouped') = 'grouped'
      and ($experiments is null or list_contains($experiments, experiment))
      and ($runs is null or list_contains($runs, run_id))
)
select task || ' · ' || metric as series, list, run, value, metric as base_metric
from chosen
where n_lists <= 60
order by task, metric, created_at, run_id, list;

-- name: slice_means
-- The mean per slice value of each run's per-list values, from the slice columns of the
-- groups (or pairs) file: x = key=value, one chart per task · metric. Slice keys with more
-- than 60 values are left out; MMA (one value per threshold) is left to curves.toml.
-- Parameters: $experiments varchar[], $runs integer[] (NULL = all).
-- Output: series, slice, run, value, n_lists, base_metric (the registry name: its direction
--   picks the colour scale of the series).
with entries as (
    select run_id, run, created_at, task, metric, params, group_id, value,
           unnest(map_entries(slices)) as entry
    from v_lists
    where slices is not null and metric <> 'mma'
      and coalesce(params ->> 'ties', 'grouped') = 'grouped'
      and ($experiments is null or list_contains($experiments, experiment))
      and ($runs is null or list_contains($runs, run_id))
),
small_keys as (
    select entry.key as key
    from entries
    group by entry.key
    having count(distinct entry.value) <= 60
),
shown as (
    select run_id, run, created_at, task, metric, params, group_id, value, entry.key as key,
           entry.key || '=' || entry.value as slice,
           array_to_string(
               list_filter(
                   list_transform(json_keys(params), lambda k: k || '=' || (params ->> k)),
                   lambda s: s <> 'ties=grouped'),
               ', ') as shown_params
    from entries
    where entry.key in (select key from small_keys)
)
select task || ' · ' || metric
           || case when shown_params = '' then '' else ' (' || shown_params || ')' end
           as series,
       slice, run, avg(value order by group_id) as value, count(value) as n_lists,
       metric as base_metric
from shown
group by task, metric, params, shown_params, key, slice, run_id, run, created_at
order by task, metric, length(params), params, key, slice, created_at, run_id;
