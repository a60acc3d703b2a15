-- Queries of dashboards/comparison.toml.

-- name: list_differences
-- Per-list differences between pairs of runs. Without $runs: in each experiment, the newest
-- run against the one before it. With $runs: every given run against the first one given
-- (the baseline). Lists are paired on (task, metric, params, group_id); lists without a
-- value in either run (no positives) are left out. Only the headline per-list metric of each
-- task is kept: ap, ap_voc07, precision_at_sigma at 3 px, iou; values of an official
-- protocol are left out, as `evalstore compare` without --protocol leaves them out (the page
-- takes its intervals from compare).
-- Parameters: $experiments varchar[], $runs integer[] (NULL = all).
-- Output: run_id, run, baseline_id, baseline, task, metric, params, group_id, value,
--   baseline_value, diff (= value - baseline_value), one row per paired list.
with selected as (
    select run_id, run, experiment, created_at,
           row_number() over (
               partition by experiment order by created_at desc, run_id desc
           ) as recency,
           list_position($runs, run_id) as given_at
    from v_runs
    where ($experiments is null or list_contains($experiments, experiment))
      and ($runs is null or list_contains($runs, run_id))
),
pairs as (
    select a.run_id, a.run, b.run_id as baseline_id, b.run as baseline,
           coalesce(a.given_at, 0) as given_at, a.experiment, a.created_at
    from selected a
    join selected b
      on case when $runs is null
              then a.experiment = b.experiment and a.recency = 1 and b.recency = 2
              else b.given_at = 1 and a.given_at > 1 end
),
headline as (
    select run_id, task, metric, params, group_id, value
    from v_lists
    where value is not null
      and params ->> 'protocol' is null
      and (metric in ('ap', 'ap_voc07', 'iou')
           or (metric = 'precision_at_sigma' and cast(params ->> 'sigma' as double) = 3))
)
select p.run_id, p.run, p.baseline_id, p.baseline, x.task, x.metric, x.params, x.group_id,
       x.value, y.value as baseline_value, x.value - y.value as diff
from pairs p
join headline x on x.run_id = p.run_id
join headline y
  on y.run_id = p.baseline_id and y.task = x.task and y.metric = x.metric
 and y.params = x.params and y.group_id is not distinct from x.group_id
order by p.given_at, p.experiment, p.created_at, p.run_id, x.task, x.metric, x.params, diff,
         x.group_id;
