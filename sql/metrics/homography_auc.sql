-- homography_auc: the area under the cumulative curve of the corner errors of a run's
-- estimated homographies, up to each threshold t (pixels), over t (the HPatches homography
-- AUC of LoFTR's and LightGlue's papers; glue-factory's hpatches eval at 1, 3, 5 px). A pair's
-- corner error is the mean distance of the corners (0, 0), (w, 0), (w, h), (0, h) of image 0
-- warped by the estimate (e11..e33, image 0 -> 1) and by the truth (h11..h33), added in that
-- order (glue-factory's homography_corner_error, gluefactory/geometry/homography.py @
-- 2d17e3b3bd7d); +inf where estimation failed or a corner is sent to infinity; a pair without a true homography or size, or
-- whose estimate is the inverse of the image 1 -> 0 one (stored before schema 10), is left
-- out. The AUC follows $auc's code (lib/error_auc.sql: SuperGlue's, LoFTR's or glue-factory's
-- rounded one). The value is the run's, not a mean over pairs: one row of group_id NULL per t.
-- Parameters: $runs integer[], $thresholds double[] (default 1, 3, 5), $auc varchar.
-- Output: run_id, group_id (NULL), threshold, value (0..1, higher is better; NULL for a run
-- without such pairs).
with
candidates as (
    select *
    from pairs
    where list_contains($runs, run_id) and h11 is not null and width is not null
      and height is not null and (e11 is null or e_direction = 'direct')
),
corners as (
    select k, a, b from (values (1, 0, 0), (2, 1, 0), (3, 1, 1), (4, 0, 1)) as c(k, a, b)
),
warped as (
    select p.run_id, p.pair_no, c.k,
           (p.e11 * c.a * p.width + p.e12 * c.b * p.height + p.e13)
             / nullif(p.e31 * c.a * p.width + p.e32 * c.b * p.height + p.e33, 0) as ex,
           (p.e21 * c.a * p.width + p.e22 * c.b * p.height + p.e23)
             / nullif(p.e31 * c.a * p.width + p.e32 * c.b * p.height + p.e33, 0) as ey,
           (p.h11 * c.a * p.width + p.h12 * c.b * p.height + p.h13)
             / nullif(p.h31 * c.a * p.width + p.h32 * c.b * p.height + p.h33, 0) as hx,
           (p.h21 * c.a * p.width + p.h22 * c.b * p.height + p.h23)
             / nullif(p.h31 * c.a * p.width + p.h32 * c.b * p.height + p.h33, 0) as hy
    from candidates p
    cross join corners c
    where p.e11 is not null
),
distances as (
    select run_id, pair_no, k, sqrt((ex - hx) * (ex - hx) + (ey - hy) * (ey - hy)) as d
    from warped
),
corner_errors as (
    select run_id, pair_no,
           (max(case when k = 1 then d end) + max(case when k = 2 then d end)
            + max(case when k = 3 then d end) + max(case when k = 4 then d end)) / 4.0::double
             as err
    from distances
    group by run_id, pair_no
),
errors as (
    select p.run_id, 0.0::double as setting,
           coalesce(c.err, cast('Infinity' as double)) as e
    from candidates p
    left join corner_errors c on c.run_id = p.run_id and c.pair_no = p.pair_no
),
auc_ths as (
    select unnest($thresholds) as t
),
-- @include lib/error_auc.sql
,
runs as (
    select distinct run_id from pairs where list_contains($runs, run_id)
)
select r.run_id, cast(null as varchar) as group_id, a.t as threshold, x.value
from runs r
cross join auc_ths a
left join aucs x on x.run_id = r.run_id and x.t = a.t
