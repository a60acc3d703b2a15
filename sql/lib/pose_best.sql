-- The pose errors of each run's pairs at the estimation setting its metrics read, and their
-- AUCs (pose_error, pose_auc, pose_maa, pose_ransac_threshold). A pair's error is
-- max(err_t, err_r) of its estimate in pose_estimates (degrees, +inf where estimation failed)
-- made with $method, $confidence and each RANSAC threshold (px) of $ransac_thresholds (one,
-- or glue-factory's sweep). The setting kept per run is the threshold of the largest mAA,
-- (AUC@5 + AUC@10 + AUC@20) / 3 added in that order as np.mean adds them, the smallest
-- threshold among equal ones (glue-factory's eval_poses: best_th = max(mAAs, key=mAAs.get)
-- over its thresholds in ascending order, cvg/glue-factory gluefactory/eval/utils.py @
-- 2d17e3b3bd7d); with one threshold, that one.
-- Parameters: $runs integer[], $method varchar, $confidence double,
-- $ransac_thresholds double[], $auc varchar, and {sweep}: the AUC thresholds wanted besides
-- 5, 10, 20 (a $parameter, or a constant list).
-- Output: the CTEs errors(run_id, setting, pair_no, e), aucs(run_id, setting, t, value),
-- maa(run_id, setting, value) and best(run_id, setting, maa).
errors as (
    select run_id, threshold as setting, pair_no, greatest(err_t, err_r) as e
    from pose_estimates
    where list_contains($runs, run_id) and method = $method and confidence = $confidence
      and list_contains($ransac_thresholds, threshold)
),
auc_ths as (
    select unnest({sweep}) as t
    union
    select t from (values (5.0::double), (10.0::double), (20.0::double)) as f(t)
),
-- @include lib/error_auc.sql
,
maa as (
    select run_id, setting,
           (max(case when t = 5.0::double then value end)
             + max(case when t = 10.0::double then value end)
             + max(case when t = 20.0::double then value end)) / 3.0::double as value
    from aucs
    group by run_id, setting
),
best as (
    select run_id, min(setting) as setting, max(maa) as maa
    from (
        select run_id, setting, value as maa,
               max(value) over (partition by run_id) as top
        from maa
    ) as m
    where maa = top
    group by run_id
)
