-- reprojection_error: EventPoint's reprojection evaluation (HVGA ATIS). Per image pair, the
-- homography R estimated from its matches (RANSAC, stored at ingest as r11..r33, image 1 ->
-- image 0) maps each matched point (x1, y1) into image 0; the error of a match is the pixel
-- distance to its (x0, y0); the pair's value is the mean over its matches, NULL when the
-- estimation failed or the pair has no match.
-- The sum is exact, the same bits in any order of the matches (docs/metrics.md, "Determinism"):
-- with u the power of two at or above the pair's largest error m (a max does not depend on the
-- order) and n their number, mean = u * sum(err / u) / n; each err / u (exact) is in [0, 1],
-- and sum_exact adds them (below 2^90 * 2^35 < 10^38 at its scale: fewer than 2^35 matches a
-- pair).
-- A non-finite m (an estimate that sends a point to infinity) is the pair's value, as it is the
-- mean's.
-- Parameters: $runs integer[].
-- Output: run_id, group_id (pair), value (pixels; lower is better).
with
estimates as (
    select run_id, pair_id, pair_no, r11, r12, r13, r21, r22, r23, r31, r32, r33
    from pairs
    where list_contains($runs, run_id)
),
projected as (
    select m.run_id, m.pair_no, m.x0, m.y0,
           (e.r11 * m.x1 + e.r12 * m.y1 + e.r13)
             / nullif(e.r31 * m.x1 + e.r32 * m.y1 + e.r33, 0) as tx,
           (e.r21 * m.x1 + e.r22 * m.y1 + e.r23)
             / nullif(e.r31 * m.x1 + e.r32 * m.y1 + e.r33, 0) as ty
    from matches m
    join estimates e on e.run_id = m.run_id and e.pair_no = m.pair_no
    where e.r11 is not null
),
errors as (
    select run_id, pair_no, sqrt((tx - x0) * (tx - x0) + (ty - y0) * (ty - y0)) as err
    from projected
),
scales as (
    -- m: the pair's largest error, u: the power of two from m up, n: how many errors
    select run_id, pair_no, max(err) as m, pow(2, ceil(log2(nullif(max(err), 0)))) as u,
           count(err) as n
    from errors
    group by run_id, pair_no
),
sums as (
    -- sum(err / u), exact; pairs with a finite m only (m * 0 = 0 is false for an infinite or
    -- NaN m, whose cast to a decimal in sum_exact would fail)
    select x.run_id, x.pair_no, sum_exact(x.err / nullif(s.u, 0)) as total
    from errors x
    join scales s on s.run_id = x.run_id and s.pair_no = x.pair_no
    where s.m * 0.0::double = 0.0::double
    group by x.run_id, x.pair_no
)
select e.run_id, e.pair_id as group_id,
       case when s.m is null then null
            when not (s.m * 0.0::double = 0.0::double) then s.m
            when s.m = 0 then 0.0::double
            else t.total * s.u / nullif(cast(s.n as double), 0) end as value
from estimates e
left join scales s on s.run_id = e.run_id and s.pair_no = e.pair_no
left join sums t on t.run_id = e.run_id and t.pair_no = e.pair_no
