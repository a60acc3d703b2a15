-- The area under the recall curve of errors, per threshold t, over t (pose_auc, pose_maa,
-- pose_error, pose_ransac_threshold, homography_auc). Per (run, setting) the errors sorted,
-- e_1 <= ... <= e_n, with the recall r_i at the i-th, the curve's points (0, 0), (e_1, r_1),
-- ..., held flat from the last error below t to t:
--   AUC(t) = [ sum_{e_i < t} (e_i - e_{i-1}) * (r_i + r_{i-1}) / 2 + (t - e_k) * r_k ] / t
-- with e_0 = r_0 = 0 and k the number of errors below t (an error equal to t adds no area,
-- as np.searchsorted puts t before it; an infinite error, a failed estimate, counts in n and
-- never under the curve). The trapezoids are added by sum_exact (each at most t).
-- $auc names whose code's floating-point steps are followed:
--   'superglue'   r_i = i / n (SuperGlue's pose_auc, magicleap/SuperGluePretrainedNetwork
--                 models/utils.py @ ddcf11f42e7e);
--   'loftr'       r_i = i * (1 / n), r_n = 1 (np.linspace(0, 1, n + 1): LoFTR's error_auc,
--                 zju3dv/LoFTR src/utils/metrics.py @ df7ca80f9173);
--   'gluefactory' as superglue, each AUC rounded to 4 decimals half to even (np.round(auc, 4):
--                 cal_error_auc, cvg/glue-factory gluefactory/utils/tools.py @ 2d17e3b3bd7d).
-- Reads the CTEs errors(run_id, setting, e) and auc_ths(t) (t > 0); parameter $auc varchar.
-- Output: the CTE aucs(run_id, setting, t, value).
ranked as (
    select run_id, setting, e,
           row_number() over (partition by run_id, setting order by e) as i,
           count(*) over (partition by run_id, setting) as n
    from errors
),
recalls as (
    select run_id, setting, e, i,
           case when $auc = 'loftr' and i = n then 1.0::double
                when $auc = 'loftr'
                    then cast(i as double) * (1.0::double / nullif(cast(n as double), 0))
                else cast(i as double) / nullif(cast(n as double), 0) end as r
    from ranked
),
segments as (
    select run_id, setting, e, r,
           lag(e, 1, 0.0::double) over (partition by run_id, setting order by i) as e_prev,
           lag(r, 1, 0.0::double) over (partition by run_id, setting order by i) as r_prev
    from recalls
),
below as (
    -- the points below each threshold: their trapezoids, the last one's error and recall
    select s.run_id, s.setting, a.t,
           case when s.e < a.t then (s.e - s.e_prev) * (s.r + s.r_prev) / 2.0::double
                else 0.0::double end as area,
           case when s.e < a.t then s.e end as e_in,
           case when s.e < a.t then s.r end as r_in
    from segments s
    cross join auc_ths a
),
areas as (
    select run_id, setting, t,
           (sum_exact(area)
             + (t - coalesce(max(e_in), 0.0::double))
               * (coalesce(max(r_in), 0.0::double) + coalesce(max(r_in), 0.0::double))
               / 2.0::double) / nullif(t, 0) as value
    from below
    group by run_id, setting, t
),
aucs as (
    -- glue-factory's np.round(auc, 4): rint(auc * 10^4) / 10^4, a half to the even neighbour
    select run_id, setting, t,
           case when $auc <> 'gluefactory' then value
                when value * 10000.0::double - floor(value * 10000.0::double) = 0.5::double
                     and floor(floor(value * 10000.0::double) / 2.0::double) * 2.0::double
                         = floor(value * 10000.0::double)
                    then floor(value * 10000.0::double) / 10000.0::double
                when value * 10000.0::double - floor(value * 10000.0::double) = 0.5::double
                    then (floor(value * 10000.0::double) + 1.0::double) / 10000.0::double
                else round(value * 10000.0::double) / 10000.0::double end as value
    from areas
)
