-- Queries of dashboards/overview.toml: the leaderboard, the runs and the metric history.
-- Every query takes $experiments varchar[] and $runs integer[] (NULL = all but step runs).
-- A configuration is what v_groups finds: the runs of one experiment whose params are equal
-- but for `seed`; a run without a `seed` parameter is a configuration of its own (runs that
-- record no parameters are not seeds of one setting). Its statistics are taken over the
-- runs that pass the filters.

-- name: leaderboard
-- The headline metrics of every configuration (evalstore.metrics.HEADLINE, the columns of
-- `evalstore leaderboard`): map of verification, matching and retrieval; map, map_voc07
-- and map_voc10 of classification; precision_at_sigma at 3 px, mma at 3 px and
-- homography_accuracy at eps 3 of keypoints; iou of outcomes. Overall values (slice ''),
-- the default tie policy (grouped), no protocol. mean and sd (n - 1 in the denominator; NULL
-- for one run) are across the configuration's runs, taken in run order (the same database
-- gives the same bits). The leaderboard panel pivots the rows: one row per configuration,
-- one column per (task, metric, params), in this order.
-- Output: experiment, config, runs (varchar[], experiment/name), n_runs, task, metric,
--   base_metric, params, mean, sd.
with members as (
    -- each run's configuration; a run without a seed parameter is one of its own
    select distinct experiment, run_id,
           case when seed is null then '#' || run_id else config end as config
    from (select experiment, config, unnest(run_ids) as run_id, unnest(seeds) as seed
          from v_groups)
),
headline as (
    select m.experiment, m.config, v.run_id, v.run, cast(v.task as varchar) as task, v.metric,
           v.base_metric, v.params, v.value,
           case v.base_metric
               when 'ap' then 1 when 'ap_voc07' then 2 when 'ap_voc10' then 3
               when 'precision_at_sigma' then 1 when 'mma' then 2
               when 'homography_accuracy' then 3 else 1 end as metric_order
    from v_metrics v
    join members m on m.run_id = v.run_id
    where (
-- @include lib/headline.sql
    )
      and ($experiments is null or list_contains($experiments, v.experiment))
      and (list_contains($runs, v.run_id)
            or ($runs is null and v.run_id not in (select step_run_id from run_steps)))
)
select experiment, config, list(run order by run) as runs, count(*) as n_runs, task, metric,
       base_metric, params,
       avg(value order by run_id) as mean,
       stddev_samp(value order by run_id) as sd
from headline
group by experiment, config, task, metric, base_metric, params, metric_order
order by case task when 'verification' then 1 when 'matching' then 2 when 'retrieval' then 3
                   when 'classification' then 4 when 'keypoints' then 5 else 6 end,
         metric_order, experiment, config;

-- name: latest_values
-- The latest overall value (slice '' = all lists) of every metric of every run, newest run
-- first (for tables of your own). params shows the metric's parameters without the default
-- tie policy.
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
  and (list_contains($runs, run_id)
        or ($runs is null and run_id not in (select step_run_id from run_steps)))
-- (parameters by length, then text: threshold=2.0 before threshold=10.0)
order by v_metrics.created_at desc, run_id desc, task, metric, length(v_metrics.params),
         v_metrics.params;

-- name: runs
-- The runs with their metadata, newest first; `logged`: the latest value of each metric
-- logged with `evalstore log` (at its last step, named after the value), by metric name.
-- Output: run, created_at, git_commit, tags, params, notes, logged.
with latest as (
    select run_id, metric, step, value
    from logged_values
    qualify row_number() over (partition by run_id, metric order by step desc nulls last) = 1
),
logged as (
    select run_id,
           string_agg(metric || ' ' || format('{:.4g}', value)
                      || coalesce(' (step ' || step || ')', ''), ', ' order by metric) as logged
    from latest
    group by run_id
)
select v.run,
       strftime(v.created_at, '%Y-%m-%d %H:%M') as created_at,
       left(v.git_commit, 10) as git_commit,
       v.tags,
       cast(v.params as varchar) as params,
       v.notes,
       coalesce(l.logged, '') as logged
from v_runs v
left join logged l on l.run_id = v.run_id
where ($experiments is null or list_contains($experiments, v.experiment))
  and (list_contains($runs, v.run_id)
        or ($runs is null and v.run_id not in (select step_run_id from run_steps)))
order by v.created_at desc, v.run_id desc;

-- name: metric_history
-- Each metric's overall value over time, one series of points per configuration (never one
-- line through several configurations: their order in time says nothing of a trend). A
-- configuration's point sits at the time of its latest run (when its last seed landed): the
-- mean across its runs, sd their standard deviation and ci the half-width of the 95% Student
-- t interval of the mean (t(0.975, n - 1) sd / sqrt(n), as v_groups computes it; NULL for
-- one run; drawn as error bars). A configuration whose runs landed at different times also
-- has a point at each
-- earlier run time: the mean of the runs it had by then, so that its points, joined by a
-- line, show its estimate as its seeds came in. `series` names the task, metric and
-- parameters (one chart each); MMA curves are left to curves.toml.
-- Output: series, experiment, config (the configuration: its params but for seed, or
--   '#<run_id>' for a run without a seed), run (the configuration's runs so far,
--   comma-separated), n_runs, created_at, value, sd, ci, base_metric.
with members as (
    -- each run's configuration; a run without a seed parameter is one of its own
    select distinct experiment, run_id,
           case when seed is null then '#' || run_id else config end as config
    from (select experiment, config, unnest(run_ids) as run_id, unnest(seeds) as seed
          from v_groups)
),
values_ as (
    select cast(v.task as varchar) as task, v.metric, v.base_metric, v.params,
           v.experiment, m.config, v.run, v.run_id, v.created_at, v.value,
-- @include lib/shown_params.sql params=v.params
    from v_metrics v
    join members m on m.run_id = v.run_id
    where v.slice = '' and v.base_metric <> 'mma'
      and ($experiments is null or list_contains($experiments, v.experiment))
      and (list_contains($runs, v.run_id)
            or ($runs is null and v.run_id not in (select step_run_id from run_steps)))
),
times as (
    -- the times at which a configuration gained runs
    select distinct task, metric, base_metric, params, shown_params, experiment, config,
           created_at
    from values_
),
points as (
    select t.task, t.metric, t.base_metric, t.params, t.shown_params, t.experiment, t.config,
           t.created_at,
           string_agg(v.run, ', ' order by v.run) as run,
           count(*) as n_runs,
           max(v.run_id) as last_run_id,
           count(v.value) as n_values,
           avg(v.value order by v.run_id) as value,
           stddev_samp(v.value order by v.run_id) as sd
    from times t
    join values_ v
      on v.task = t.task and v.metric = t.metric and v.params = t.params
     and v.experiment = t.experiment and v.config = t.config
     and v.created_at <= t.created_at
    group by t.task, t.metric, t.base_metric, t.params, t.shown_params, t.experiment,
             t.config, t.created_at
),
quantile as (
    -- t(0.975, n - 1) of the configuration's values so far
    select p.*,
-- @include lib/t975.sql table=q.q975 df=p.n_values-1
    from points p
    left join student_t q on q.df = p.n_values - 1
)
select task || ' · ' || metric
           || case when shown_params = '' then '' else ' (' || shown_params || ')' end
           as series,
       experiment, config, run, n_runs, created_at, value, sd,
       case when n_values > 1 then q * sd / sqrt(n_values) end as ci, base_metric
from quantile
order by task, metric, length(params), params, created_at, last_run_id;

-- name: step_values
-- Each metric against the training step, one line per run with steps: the overall values
-- (slice '') of the run's step runs (run_steps: NAME@STEP, hidden from the lists of runs), at
-- their steps. `series` names the task, metric and parameters as metric_history does (one
-- chart each); MMA curves are left to curves.toml. $runs names the runs with steps (their
-- step runs come with them).
-- Parameters: $experiments varchar[], $runs integer[] (NULL = all).
-- Output: series, run, step, value, base_metric.
with values_ as (
    select cast(v.task as varchar) as task, v.metric, v.base_metric, v.params, s.step,
           r.experiment || '/' || r.name as run, v.value,
-- @include lib/shown_params.sql params=v.params
    from run_steps s
    join runs r on r.run_id = s.run_id
    join v_metrics v on v.run_id = s.step_run_id
    where v.slice = '' and v.base_metric <> 'mma'
      and ($experiments is null or list_contains($experiments, r.experiment))
      and ($runs is null or list_contains($runs, s.run_id))
)
select task || ' · ' || metric
           || case when shown_params = '' then '' else ' (' || shown_params || ')' end
           as series,
       run, step, value, base_metric
from values_
order by task, metric, length(params), params, run, step;
