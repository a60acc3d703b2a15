-- pose_error: per image pair, max(err_t, err_r) in degrees of its relative pose estimate
-- (pose_estimates: the translation direction's angle folded to at most 90 degrees and the
-- rotation's angle, SuperGlue's compute_pose_error; +inf where estimation failed), at the
-- RANSAC threshold of lib/pose_best.sql. The run's value is the median over its pairs (a mean
-- would be infinite with one failure): the middle error, or the mean of the two middle ones
-- (np.median), which is +inf when more than half the pairs failed; under $auc = 'gluefactory'
-- rounded to 3 decimals, half to even, as glue-factory's summary (round(np.median(arr), 3)).
-- Parameters: $runs integer[], $method varchar, $confidence double,
-- $ransac_thresholds double[], $auc varchar.
-- Output: run_id, group_id (pair; NULL: the run's median), value (degrees, lower is better).
with
-- @include lib/pose_best.sql sweep=[5.0::double]
,
chosen as (
    select e.run_id, e.pair_no, e.e,
           row_number() over (partition by e.run_id order by e.e) as i,
           count(*) over (partition by e.run_id) as n
    from errors e
    join best b on b.run_id = e.run_id and b.setting = e.setting
),
medians as (
    -- the middle row (n odd: 2i = n + 1), or the two middle rows (n even: 2i = n, n + 2)
    select run_id,
           sum(case when 2 * i >= n and 2 * i <= n + 2 then e end)
             / nullif(cast(count(case when 2 * i >= n and 2 * i <= n + 2 then e end) as double), 0)
             as m
    from chosen
    group by run_id
)
select c.run_id, p.pair_id as group_id, c.e as value
from chosen c
join pairs p on p.run_id = c.run_id and p.pair_no = c.pair_no
union all
select run_id, cast(null as varchar) as group_id,
       case when $auc <> 'gluefactory' or not (m < 1e15::double) then m
            when m * 1000.0::double - floor(m * 1000.0::double) = 0.5::double
                 and floor(floor(m * 1000.0::double) / 2.0::double) * 2.0::double
                     = floor(m * 1000.0::double)
                then floor(m * 1000.0::double) / 1000.0::double
            when m * 1000.0::double - floor(m * 1000.0::double) = 0.5::double
                then (floor(m * 1000.0::double) + 1.0::double) / 1000.0::double
            else round(m * 1000.0::double) / 1000.0::double end as value
from medians
