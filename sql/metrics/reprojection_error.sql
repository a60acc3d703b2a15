-- reprojection_error: EventPoint's reprojection evaluation (HVGA ATIS). Per image pair, the
-- homography R estimated from its matches (RANSAC, stored at ingest as r11..r33, image 1 ->
-- image 0) maps each matched point (x1, y1) into image 0; the error of a match is the pixel
-- distance to its (x0, y0); the pair's value is the mean over its matches, NULL when the
-- estimation failed or the pair has no match.
-- Parameters: $runs integer[].
-- Output: run_id, group_id (pair), value (pixels; lower is better).
with
estimates as (
    select run_id, pair_id, r11, r12, r13, r21, r22, r23, r31, r32, r33
    from pairs
    where list_contains($runs, run_id)
),
projected as (
    select m.run_id, m.pair_id, m.x0, m.y0,
           (e.r11 * m.x1 + e.r12 * m.y1 + e.r13)
             / nullif(e.r31 * m.x1 + e.r32 * m.y1 + e.r33, 0) as tx,
           (e.r21 * m.x1 + e.r22 * m.y1 + e.r23)
             / nullif(e.r31 * m.x1 + e.r32 * m.y1 + e.r33, 0) as ty
    from matches m
    join estimates e on e.run_id = m.run_id and e.pair_id = m.pair_id
    where e.r11 is not null
),
errors as (
    select run_id, pair_id, avg(sqrt((tx - x0) * (tx - x0) + (ty - y0) * (ty - y0))) as err
    from projected
    group by run_id, pair_id
)
select e.run_id, e.pair_id as group_id, r.err as value
from estimates e
left join errors r on r.run_id = e.run_id and r.pair_id = e.pair_id
