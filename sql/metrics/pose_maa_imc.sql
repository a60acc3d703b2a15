-- pose_maa_imc: the Image Matching Challenge's stereo mAA of a run (ubc-vision/
-- image-matching-benchmark utils/pack_helper.py compute_qt_auc @ e3c1cbd6bf5c): with the pairs'
-- pose errors e (max(err_t, err_r) in degrees at the RANSAC threshold of lib/pose_best.sql;
-- +inf where estimation failed), the accuracy at k degrees is the fraction of pairs with
-- e < k for k = 1..9 and e <= 10 for k = 10 (np.histogram over the bins 0, 1, ..., 10, the
-- last one closed, accumulated); the mAA up to u degrees is the mean accuracy at 1..u (IMC
-- reports u = 10, qt_auc_10, and u = 5).
-- The value is the run's, not a mean over pairs: one row of group_id NULL per u.
-- Parameters: $runs integer[], $thresholds double[] (u, whole numbers 1..10; default 10),
-- $method varchar, $confidence double, $ransac_thresholds double[], $auc varchar.
-- Output: run_id, group_id (NULL), threshold, value (0..1, higher is better).
with
-- @include lib/pose_best.sql sweep=[5.0::double]
,
chosen as (
    select e.run_id, e.e
    from errors e
    join best b on b.run_id = e.run_id and b.setting = e.setting
),
degrees as (
    select k from (values (1), (2), (3), (4), (5), (6), (7), (8), (9), (10)) as d(k)
),
accuracy as (
    select c.run_id, d.k,
           cast(count(case when c.e < d.k or (d.k = 10 and c.e = 10.0::double) then 1 end)
                as double) / nullif(cast(count(*) as double), 0) as acc
    from chosen c
    cross join degrees d
    group by c.run_id, d.k
),
up_to as (
    select unnest($thresholds) as threshold
)
select a.run_id, cast(null as varchar) as group_id, u.threshold,
       case when u.threshold < 1.0::double or u.threshold > 10.0::double then null
            else sum_exact(a.acc) / nullif(u.threshold, 0) end as value
from accuracy a
cross join up_to u
where a.k <= u.threshold
group by a.run_id, u.threshold
