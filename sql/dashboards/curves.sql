-- Queries of dashboards/curves.toml: precision-recall curves, MMA curves, COCO curves and
-- cumulative pose-error curves.

-- name: pr_runs
-- The (run, task) pairs to draw PR curves for: every ranked-list task of the selected runs;
-- without $runs, the 8 newest runs of each task (n_task says how many it has: the page
-- states the cap where it leaves runs out).
-- Parameters: $experiments varchar[], $runs integer[] (NULL = all).
-- Output: run_id, run, task, n_task.
with tasks as (
    select distinct run_id, cast(task as varchar) as task from groups where list_id is not null
),
selected as (
    select r.run_id, r.run, t.task, r.created_at,
           row_number() over (
               partition by t.task order by r.created_at desc, r.run_id desc
           ) as recency,
           count(*) over (partition by t.task) as n_task
    from v_runs r
    join tasks t on t.run_id = r.run_id
    where ($experiments is null or list_contains($experiments, r.experiment))
      and (list_contains($runs, r.run_id)
            or ($runs is null and r.run_id not in (select step_run_id from run_steps)))
)
select run_id, run, task, n_task
from selected
where $runs is not null or recency <= 8
order by case task when 'verification' then 1 when 'matching' then 2
                   when 'retrieval' then 3 else 4 end,
         created_at, run_id;

-- name: pr_points
-- The mean interpolated precision-recall curve of each run for one task: for each list,
-- the interpolated precision max{P_i : R_i >= t} (the precision envelope, 0 where the list
-- never reaches recall t) at t = 0, 0.01, ..., 1 (the COCO grid), averaged over the run's
-- lists with positives. A single list (verification) gives its own curve; the area under
-- the curve is that run's map_coco.
-- Parameters: $runs integer[] (not NULL), $task varchar, $ties varchar.
-- Output: run_id, recall, precision, n_lists (101 rows per run).
with
-- @include lib/ranking_points.sql
,
-- @include lib/envelope.sql
,
-- @include lib/pr_grid.sql
,
counted as (
    select run_id, count(*) as n_lists from lists where n_pos > 0 group by run_id
)
select c.run_id, g.t as recall,
       -- summed in a fixed order: the same database gives the same bits
       coalesce(sum(a.env order by a.group_id), 0.0) / c.n_lists as precision,
       c.n_lists
from counted c
cross join grid g
left join at_grid a on a.run_id = c.run_id and a.k = g.k
group by c.run_id, g.k, g.t, c.n_lists
order by c.run_id, g.k;

-- name: mma_curves
-- Mean matching accuracy against the pixel threshold, one curve per keypoints run.
-- Parameters: $experiments varchar[], $runs integer[] (NULL = all).
-- Output: run, threshold, mma, n_lists.
select run, cast(params ->> 'threshold' as double) as threshold, value as mma, n_lists
from v_metrics
where base_metric = 'mma' and slice = ''
  and ($experiments is null or list_contains($experiments, experiment))
  and (list_contains($runs, run_id)
        or ($runs is null and run_id not in (select step_run_id from run_steps)))
order by created_at, run_id, threshold;

-- name: det_pr_curves
-- COCO's precision-recall curve of each category of the detection runs (pycocotools'
-- precision[0, :, k, 0, -1]: IoU 0.50, every area, 100 detections per image): the
-- interpolated precision at recall 0, 0.01, ..., 1 (0 where the recall is never reached),
-- and the mean over the run's categories with ground truth (category "(all)").
-- Parameters: $experiments varchar[], $runs integer[] (NULL = all).
-- Output: run, category, recall, precision.
with
-- @include lib/coco_det_curve.sql area=all label=label maxdets=100 iou=0.5::double
,
-- @include lib/envelope.sql
,
-- @include lib/pr_grid.sql
,
chosen as (
    select l.run_id, r.run, r.created_at, l.group_id, coalesce(c.name, l.group_id) as category
    from lists l
    join v_runs r on r.run_id = l.run_id
    left join det_categories c on c.run_id = l.run_id and c.category_id = l.group_id
    where l.n_pos > 0
      and ($experiments is null or list_contains($experiments, r.experiment))
      and ($runs is not null or l.run_id not in (select step_run_id from run_steps))
),
points as (
    select c.run, c.created_at, c.run_id, c.category, g.k, g.t as recall,
           coalesce(a.env, 0.0::double) as precision
    from chosen c
    cross join grid g
    left join at_grid a on a.run_id = c.run_id and a.group_id = c.group_id and a.k = g.k
)
select run, category, recall, precision
from (
    select run, created_at, run_id, category, k, recall, precision from points
    union all
    select run, created_at, run_id, '(all)', k, recall, avg(precision)
    from points
    group by run, created_at, run_id, k, recall
) p
order by category = '(all)' desc, category, created_at, run_id, k;

-- name: pose_error_curves
-- The cumulative pose error of each keypoints run with pose estimates at one estimation
-- setting: the fraction of the run's pairs whose pose error max(err_t, err_r) (degrees,
-- SuperGlue's: the rotation angle and the translation-direction angle; +inf where the
-- estimate failed) is at most x, for 81 values of x from 0 to the bound: the smallest of
-- pose_auc's 5, 10 and 20 degrees that the largest finite error of the chart's runs stays
-- within, else 20. The area under a curve up to the bound, over the bound, is about the
-- run's pose_auc there (SuperGlue's exact AUC interpolates between the pairs' errors, this
-- grid between its points).
-- Parameters: $experiments varchar[], $runs integer[] (NULL = all), $method varchar,
--   $threshold double (px), $confidence double.
-- Output: run, error, fraction, n_pairs (81 rows per run).
with chosen as (
    select r.run_id, r.run, r.created_at
    from v_runs r
    where ($experiments is null or list_contains($experiments, r.experiment))
      and (list_contains($runs, r.run_id)
            or ($runs is null and r.run_id not in (select step_run_id from run_steps)))
),
errors as (
    select e.run_id, greatest(e.err_t, e.err_r) as err
    from pose_estimates e
    join chosen c on c.run_id = e.run_id
    where e.method = $method and e.threshold = $threshold and e.confidence = $confidence
),
counted as (
    select run_id, count(*) as n_pairs from errors group by run_id
),
span as (
    select case when coalesce(max(err), 0) <= 5 then 5.0::double
                when max(err) <= 10 then 10.0::double
                else 20.0::double end as bound
    from errors
    where isfinite(err)
),
grid as (
    select k, k * s.bound / 80 as error
    from (select unnest(range(0, 81)) as k)
    cross join span s
)
select c.run, g.error, count(e.err) / n.n_pairs as fraction, n.n_pairs
from chosen c
join counted n on n.run_id = c.run_id
cross join grid g
left join errors e on e.run_id = c.run_id and e.err <= g.error
group by c.run, c.created_at, c.run_id, g.k, g.error, n.n_pairs
order by c.created_at, c.run_id, g.k;
