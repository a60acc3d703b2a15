-- Queries of dashboards/heatmap.toml.

-- name: per_list_values
-- Per-list values (per class, query or image pair) of the ranking metrics, for the (task,
-- metric) combinations with at most 60 lists in a run: a class-by-run grid for
-- classification, query-by-run for small retrieval sets.
-- Parameters: $experiments varchar[], $runs integer[] (NULL = all).
-- Output: series (task · metric), list, run, value, base_metric (the registry name: its
--   direction picks the colour scale of the series), experiment (runs whose lists differ
--   get charts of their own, named by their experiments).
with chosen as (
    select run_id, run, experiment, created_at, task, metric, params, coalesce(group_id, '(all)') as list,
           value, count(*) over (partition by run_id, task, metric, params) as n_lists
    from v_lists
    where metric in ('ap', 'ap_voc07', 'ap_voc10', 'ap_coco')
      and coalesce(params ->> 'ties', 'grouped') = 'grouped'
      and ($experiments is null or list_contains($experiments, experiment))
      and (list_contains($runs, run_id)
            or ($runs is null and run_id not in (select step_run_id from run_steps)))
)
select task || ' · ' || metric as series, list, run, value, metric as base_metric, experiment
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
      and (list_contains($runs, run_id)
            or ($runs is null and run_id not in (select step_run_id from run_steps)))
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

-- name: confusion
-- The confusion matrix of each selected classification run with at most 30 classes (v_confusion:
-- actual = the sample's one positive class, predicted = the class of its highest score; samples
-- without exactly one positive are left out), every cell of the class x class grid, an empty
-- one with n = 0. Classes in the run's list order (the order the classes were first read),
-- runs oldest first. share = n over the samples of its actual class (NULL for a class that is
-- no sample's); the heatmap colours by it and prints n.
-- Parameters: $experiments varchar[], $runs integer[] (NULL = all).
-- Output: run_id, run, actual, predicted, n, share.
with chosen as (
    select distinct c.run_id, v.run, v.created_at
    from v_confusion c
    join v_runs v on v.run_id = c.run_id
    where ($experiments is null or list_contains($experiments, v.experiment))
      and (list_contains($runs, v.run_id)
            or ($runs is null and v.run_id not in (select step_run_id from run_steps)))
),
classes as (
    select g.run_id, g.group_id as class, g.list_id,
           count(*) over (partition by g.run_id) as n_classes
    from groups g
    join chosen c on c.run_id = g.run_id
    where g.task = 'classification'
),
cells as (
    select a.run_id, a.class as actual, a.list_id as actual_order, p.class as predicted,
           p.list_id as predicted_order
    from classes a
    join classes p on p.run_id = a.run_id
    where a.n_classes <= 30
),
counted as (
    select x.run_id, x.actual, x.actual_order, x.predicted, x.predicted_order,
           coalesce(c.n, 0) as n
    from cells x
    left join v_confusion c
      on c.run_id = x.run_id and c.actual = x.actual and c.predicted = x.predicted
)
select k.run_id, s.run, k.actual, k.predicted, k.n,
       k.n / nullif(sum(k.n) over (partition by k.run_id, k.actual), 0) as share
from counted k
join chosen s on s.run_id = k.run_id
order by s.created_at, k.run_id, k.actual_order, k.predicted_order;
