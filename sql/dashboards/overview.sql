-- Queries of dashboards/overview.toml: the leaderboard, the runs and the metric history.
-- Every query takes $experiments varchar[] and $runs integer[] (NULL = all).

-- name: leaderboard
-- The latest overall value (slice '' = all lists) of every metric of every run, newest run
-- first. params shows the metric's parameters without the default tie policy.
-- Output: run, created_at, task, metric, params, value, n_lists, n_skipped.
select run,
       strftime(created_at, '%Y-%m-%d %H:%M') as created_at,
       task,
       metric,
       array_to_string(
           list_filter(
               list_transform(json_keys(params), lambda k: k || '=' || (params ->> k)),
               lambda s: s <> 'ties=grouped'),
           ', ') as params,
       value,
       n_lists,
       n_skipped
from v_metrics
where slice = ''
  and ($experiments is null or list_contains($experiments, experiment))
  and ($runs is null or list_contains($runs, run_id))
-- (parameters by length, then text: threshold=2.0 before threshold=10.0)
order by v_metrics.created_at desc, run_id desc, task, metric, length(v_metrics.params),
         v_metrics.params;

-- name: runs
-- The runs with their metadata, newest first.
-- Output: run, created_at, git_commit, tags, params, notes.
select run,
       strftime(created_at, '%Y-%m-%d %H:%M') as created_at,
       left(git_commit, 10) as git_commit,
       tags,
       cast(params as varchar) as params,
       notes
from v_runs
where ($experiments is null or list_contains($experiments, experiment))
  and ($runs is null or list_contains($runs, run_id))
order by v_runs.created_at desc, run_id desc;

-- name: metric_history
-- Each metric's overall value over time, one series per experiment. `series` names the
-- task, metric and parameters (one chart each); MMA curves are left to curves.toml.
-- Output: series, experiment, run, created_at, value, base_metric.
with values_ as (
    select task, metric, base_metric, params, experiment, run, run_id, created_at, value,
           array_to_string(
               list_filter(
                   list_transform(json_keys(params), lambda k: k || '=' || (params ->> k)),
                   lambda s: s <> 'ties=grouped'),
               ', ') as shown_params
    from v_metrics
    where slice = '' and base_metric <> 'mma'
      and ($experiments is null or list_contains($experiments, experiment))
      and ($runs is null or list_contains($runs, run_id))
)
select task || ' · ' || metric
           || case when shown_params = '' then '' else ' (' || shown_params || ')' end
           as series,
       experiment, run, created_at, value, base_metric
from values_
order by task, metric, length(params), params, created_at, run_id;
