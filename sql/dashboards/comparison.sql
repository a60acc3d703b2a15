-- Queries of dashboards/comparison.toml.

-- name: list_differences
-- Per-list differences between a run and its baseline, the baseline chosen, never guessed:
-- with $baseline, every selected run against that run; else with $runs, every given run
-- against the first one given; else, in each experiment, its newest run against its run
-- tagged `baseline` (the newest such run; `evalstore tag RUN baseline`). An experiment
-- without a tagged baseline gives one row with its newest run and NULL in every other
-- column, so that the page can say how to choose one. Lists are paired on (task, metric,
-- params, group_id); lists without a value in either run (no positives) are left out. Only
-- the headline per-list metric of each task is kept: ap, ap_voc07, precision_at_sigma at
-- 3 px, iou; values of an official protocol are left out, as `evalstore compare` without
-- --protocol leaves them out (the page takes its intervals from compare).
-- Parameters: $experiments varchar[], $runs integer[] (NULL = all), $baseline integer
--   (NULL = none given).
-- Output: run_id, run, baseline_id, baseline, task, metric, params, group_id, value,
--   baseline_value, diff (= value - baseline_value), one row per paired list.
with selected as (
    select run_id, run, experiment, created_at,
           list_position($runs, run_id) as given_at
    from v_runs
    where ($experiments is null or list_contains($experiments, experiment))
      and (list_contains($runs, run_id)
            or ($runs is null and run_id not in (select step_run_id from run_steps)))
),
tagged as (
    -- each experiment's baseline: its newest run tagged `baseline`
    select experiment, run_id, run
    from v_runs
    where list_contains(tags, 'baseline')
      and run_id not in (select step_run_id from run_steps)  -- a step run bears its run's tags
    qualify row_number() over (
        partition by experiment order by created_at desc, run_id desc
    ) = 1
),
newest as (
    -- each selected experiment's newest run other than its baseline
    select s.run_id, s.run, s.experiment, s.created_at
    from selected s
    left join tagged t on t.experiment = s.experiment
    where t.run_id is distinct from s.run_id
    qualify row_number() over (
        partition by s.experiment order by s.created_at desc, s.run_id desc
    ) = 1
),
chosen as (
    select run_id, run from v_runs where run_id = $baseline
),
pairs as (
    select s.run_id, s.run, c.run_id as baseline_id, c.run as baseline,
           coalesce(s.given_at, 0) as given_at, s.experiment, s.created_at
    from selected s
    cross join chosen c
    where s.run_id <> c.run_id
    union all
    select a.run_id, a.run, b.run_id as baseline_id, b.run as baseline,
           a.given_at, a.experiment, a.created_at
    from selected a
    join selected b on b.given_at = 1 and a.given_at > 1
    where $baseline is null
    union all
    select n.run_id, n.run, t.run_id as baseline_id, t.run as baseline,
           0 as given_at, n.experiment, n.created_at
    from newest n
    left join tagged t on t.experiment = n.experiment
    where $baseline is null and $runs is null
),
headline as (
    select run_id, cast(task as varchar) as task, metric, cast(params as varchar) as params,
           group_id, value
    from v_lists
    where value is not null
      and params ->> 'protocol' is null
      and (metric in ('ap', 'ap_voc07', 'iou')
           or (metric = 'precision_at_sigma' and cast(params ->> 'sigma' as double) = 3))
),
run_lists as materialized (
    -- each run's lists first: joined to the baseline's lists before that, DuckDB paired
    -- every two runs' lists (8.7 million rows for 1,000 runs) and kept the pairs asked for
    select p.given_at, p.experiment, p.created_at, p.run_id, p.run, p.baseline_id,
           p.baseline, x.task, x.metric, x.params, x.group_id, x.value
    from pairs p
    join headline x on x.run_id = p.run_id
),
paired as (
    select x.given_at, x.experiment, x.created_at, x.run_id, x.run, x.baseline_id,
           x.baseline, x.task, x.metric, x.params, x.group_id, x.value,
           y.value as baseline_value, x.value - y.value as diff
    from run_lists x
    join headline y
      on y.run_id = x.baseline_id and y.task = x.task and y.metric = x.metric
     and y.params = x.params and y.group_id is not distinct from x.group_id
    union all
    -- an experiment without a tagged baseline: its newest run, nothing to pair it with
    select p.given_at, p.experiment, p.created_at, p.run_id, p.run, null, null, null, null,
           null, null, null, null, null
    from pairs p
    where p.baseline_id is null
)
select run_id, run, baseline_id, baseline, task, metric, params, group_id, value,
       baseline_value, diff
from paired
order by given_at, experiment, created_at, run_id, task, metric, params, diff, group_id;
