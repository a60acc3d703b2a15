-- Schema 4: the displayed name of each stored value, and stable views for users.
-- metric_values.label: the name shown for the value: the mean of `ap` over several lists is
-- `map`, of `iou` is `iou_macro`; a single list keeps the metric's name.
alter table metric_values add column label varchar;
update metric_values set label = metric;

-- v_metrics: every stored metric value with its run's experiment, name, time and tags.
-- metric = the displayed name (map, ap_voc07, precision_at_sigma...), base_metric = the
-- registry name, slice '' = all lists of the run.
create view v_metrics as
select r.run_id, r.experiment, r.name, r.experiment || '/' || r.name as run, r.created_at,
       r.tags, r.git_commit, m.task, m.label as metric, m.metric as base_metric, m.params,
       m.slice, m.value, m.n_lists, m.n_skipped, m.definition_sha, m.computed_at
from metric_values m
join runs r on r.run_id = m.run_id;

-- v_lists: per-list values (per query, class, image pair or group) with the list's slices.
create view v_lists as
with slices as (
    select run_id, cast(task as varchar) as task, group_id, n_positives, slices from groups
    union all
    select run_id, 'keypoints', pair_id, cast(null as integer), slices from pairs
)
select r.run_id, r.experiment, r.name, r.experiment || '/' || r.name as run, r.created_at,
       v.task, v.metric, v.params, v.group_id, v.value, s.n_positives, s.slices,
       v.definition_sha
from list_values v
join runs r on r.run_id = v.run_id
left join slices s
  on s.run_id = v.run_id and s.task = v.task and s.group_id is not distinct from v.group_id;

-- v_params: one row per (run, parameter), values as JSON text.
create view v_params as
select r.run_id, r.experiment, r.name, r.experiment || '/' || r.name as run, r.created_at,
       k.key, json_extract(r.params, '$."' || replace(k.key, '"', '\"') || '"') as value
from runs r,
     (select run_id, unnest(json_keys(params)) as key from runs) k
where k.run_id = r.run_id;
