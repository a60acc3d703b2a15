-- Evaluation bookkeeping: the cache of metric values and how it is filled. The per-list
-- values of one metric are first computed into the temp table _per_list (run_id, group_id,
-- value) by sql/metrics/<metric>.sql.

-- name: cached_overall
-- The runs of $runs that have an up-to-date overall value of $metric for $task and $params.
select run_id
from metric_values
where list_contains($runs, run_id) and task = $task and metric = $metric
  and params = $params and slice = '' and definition_sha = $sha and engine = $engine;

-- name: runs_with_task
-- Which of $runs hold rows of $task (a list with rows has a list_id in groups).
select distinct run_id from groups
where list_contains($runs, run_id) and task = $task and list_id is not null;

-- name: clear_values
delete from metric_values
where list_contains($runs, run_id) and task = $task and metric = $metric and params = $params;

-- name: clear_list_values
delete from list_values
where list_contains($runs, run_id) and task = $task and metric = $metric and params = $params;

-- name: insert_list_values
insert into list_values (run_id, task, metric, params, group_id, value, definition_sha)
select run_id, $task, $metric, $params, group_id, value, $sha
from _per_list;

-- name: insert_overall
-- Mean over lists; lists without a value (no positives) are left out and counted.
-- label: the mean's name ($mean_name, e.g. map) unless the run has a single verification list.
insert into metric_values
    (run_id, task, metric, params, slice, value, n_lists, n_skipped, definition_sha, computed_at,
     label, engine)
-- avg in a fixed order: the same lists give the same mean, bit for bit. A plain avg of doubles
-- adds the partial sums of its threads in the order they finish; with `order by group_id` (a
-- total order: a run's lists have distinct group_ids) DuckDB sorts each run's values and adds
-- them in one sequence (it keeps the order of aggregates of doubles, which depend on it).
select run_id, $task, $metric, $params, '', avg(value order by group_id), count(value),
       count(*) - count(value),
       $sha, $now,
       case when $task = 'verification' and count(*) = 1 then $metric else $mean_name end,
       $engine
from _per_list
group by run_id;

-- name: insert_list_values_given
-- insert_list_values for a metric whose SQL gives the run's value itself (registry: overall =
-- "run row", TIDE's): its row of group_id NULL is the run's, not a list's, and is left out.
insert into list_values (run_id, task, metric, params, group_id, value, definition_sha)
select run_id, $task, $metric, $params, group_id, value, $sha
from _per_list
where group_id is not null;

-- name: insert_overall_given
-- The run's value of such a metric: its SQL's row of group_id NULL (TIDE's dAP of the run is
-- not the mean over the categories); n_lists counts the lists with a value, n_skipped those
-- without (a category tidecv never saw).
insert into metric_values
    (run_id, task, metric, params, slice, value, n_lists, n_skipped, definition_sha, computed_at,
     label, engine)
select run_id, $task, $metric, $params, '', max(case when group_id is null then value end),
       count(case when group_id is not null then value end),
       count(group_id) - count(case when group_id is not null then value end),
       $sha, $now, $mean_name, $engine
from _per_list
group by run_id;

-- name: clear_slices
delete from metric_values
where list_contains($runs, run_id) and task = $task and metric = $metric and params = $params
  and slice like $key || '=%';

-- name: insert_slices
-- Mean over the lists of each value of the slice key $key; lists without the key are left
-- out (a task whose lists have no such key gets no slice rows).
-- Slice metadata lives in groups (ranked lists) and in pairs (keypoint runs). The means are
-- taken in group_id order, bit for bit the same on every recompute (as insert_overall).
insert into metric_values
    (run_id, task, metric, params, slice, value, n_lists, n_skipped, definition_sha, computed_at,
     label, engine)
with slice_source as (
    select run_id, cast(task as varchar) as task, group_id, slices from groups
    union all
    select run_id, 'keypoints' as task, pair_id as group_id, slices from pairs
)
select v.run_id, $task, $metric, $params, $key || '=' || g.slices[$key],
       avg(v.value order by v.group_id), count(v.value), count(*) - count(v.value),
       any_value(v.definition_sha), $now,
       case when $task = 'verification' and count(*) = 1 then $metric else $mean_name end,
       any_value(m.engine)
from list_values v
left join slice_source g
  on g.run_id = v.run_id and g.task = v.task and g.group_id is not distinct from v.group_id
left join metric_values m
  on m.run_id = v.run_id and m.task = v.task and m.metric = v.metric and m.params = v.params
 and m.slice = ''
where list_contains($runs, v.run_id) and v.task = $task and v.metric = $metric
  and v.params = $params and g.slices[$key] is not null
group by v.run_id, g.slices[$key];

-- name: results
-- The stored values of $runs (all metrics, or those in $metrics), with run names.
select r.experiment || '/' || r.name as run, r.run_id, r.experiment, m.task, m.metric,
       m.label, m.slice, m.value, m.n_lists, m.n_skipped, m.params, m.definition_sha,
       m.computed_at, m.engine
from metric_values m
join runs r on r.run_id = m.run_id
where list_contains($runs, m.run_id)
  and ($metrics is null or list_contains($metrics, m.metric))
order by r.created_at, r.run_id, m.task, m.metric, m.params, m.slice;

-- name: per_list_results
-- Per-list values of $runs, for `--by <list noun>` (class, query, pair, list).
select r.experiment || '/' || r.name as run, r.run_id, r.experiment, v.task, v.metric,
       $noun || '=' || coalesce(v.group_id, '') as slice, v.value,
       case when v.value is null then 0 else 1 end as n_lists,
       case when v.value is null then 1 else 0 end as n_skipped,
       v.params, v.definition_sha, m.engine
from list_values v
join runs r on r.run_id = v.run_id
left join metric_values m
  on m.run_id = v.run_id and m.task = v.task and m.metric = v.metric and m.params = v.params
 and m.slice = ''
where list_contains($runs, v.run_id) and v.task = $task
  and ($metrics is null or list_contains($metrics, v.metric))
order by r.created_at, r.run_id, v.metric, v.params, v.group_id;

-- name: all_run_ids
-- Every run but the step runs (eval --all: evaluating a run computes its last step's value;
-- a step run is evaluated when named).
select run_id from runs where run_id not in (select step_run_id from run_steps) order by run_id;

-- name: runs_with_pairs
-- Which of $runs hold keypoint pairs.
select distinct run_id from pairs where list_contains($runs, run_id);

-- name: runs_with_point_truth
-- Which of $runs hold keypoint pairs with truth for their matches: a true homography, or a
-- point given with a match or derived from a disparity (a run of pairs with cameras alone
-- has none).
select distinct run_id from pairs where list_contains($runs, run_id) and h11 is not null
union
select distinct run_id from matches where list_contains($runs, run_id) and gt_x1 is not null;

-- name: runs_with_outcomes
-- Which of $runs hold counted outcomes.
select distinct run_id from outcomes where list_contains($runs, run_id);

-- name: select_all
-- The per-list values of a metric without a sweep: all of _raw.
create or replace temp table _per_list as select run_id, group_id, value from _raw;

-- name: select_sweep
-- Placeholder step for swept metrics: _per_list is cut from _raw per sweep value by the
-- caller (the sweep column's name comes from the registry).
select 1;

-- name: stage_remote
-- The per-list values computed by another engine (registered as _remote) become _raw.
create or replace temp table _raw as select * from _remote;

-- name: stage_raw
-- The per-list values of one metric for some runs into the temp table _raw: {query} is the
-- text of sql/metrics/<metric>.sql (its $parameters bound by the caller).
create or replace temp table _raw as {query}

-- name: drop_raw
-- The temp table of stage_raw / stage_remote, after the values are stored (or an error).
drop table if exists _raw;

-- name: drop_per_list
-- The temp table of select_all / stage_sweep_value, after the values are stored (or an error).
drop table if exists _per_list;

-- name: stage_sweep_value
-- The per-list values at one value $at of a swept metric's {sweep} column (quoted from the
-- registry) into _per_list.
create or replace temp table _per_list as
select run_id, group_id, value from _raw where {sweep} = $at

-- name: leave_out_unretrieved
-- trec_eval without -c averages the queries of the run only: a list of task $task where
-- nothing was retrieved (every score NULL, i.e. -inf at ingest) has no value, and is left
-- out of the mean, rather than counting 0.
delete from _per_list p
where not exists (
    select 1
    from groups g
    join score_items s on s.list_id = g.list_id
    where g.run_id = p.run_id and g.task = $task
      and g.group_id is not distinct from p.group_id
      and s.score is not null
);

-- name: zero_without_positives
-- trec_eval scores a judged query without relevant documents 0 (map, P_k, recall_k) and
-- averages it: the lists without a value (no positives) get 0.
update _per_list set value = 0.0 where value is null;

-- name: slice_keys
-- $runs integer[]: the slice keys of any of their lists (groups.slices, pairs.slices), and
-- those of a detection run's ranked lists before they are made (store/insert_det_groups).
select distinct k from (
    select unnest(map_keys(slices)) as k from groups where list_contains($runs, run_id)
    union all
    select unnest(map_keys(slices)) from pairs where list_contains($runs, run_id)
    union all
    select unnest(['iou', 'area', 'max_dets']) from det_images where list_contains($runs, run_id)
);

-- name: runs_with_detections
-- Which of $runs hold detections (boxes and ground truth).
select distinct run_id from det_images where list_contains($runs, run_id);
