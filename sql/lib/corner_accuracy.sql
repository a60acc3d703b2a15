-- The corner accuracy of the estimated homographies (homography_accuracy and its SuperPoint
-- variant). Per image pair, four corners are warped by the estimated homography (e11..e33,
-- image 0 -> 1, estimated as such: e_direction = 'direct') and by the true one (h11..h33);
-- the corner error is the mean of the four distances, added in corner order, (d1 + d2 + d3 +
-- d4) / 4. The pair is correct (1) when it is <= eps, else 0; a failed estimation counts as
-- incorrect (0); a pair without a true homography or size, or whose estimate is the inverse
-- of the image 1 -> 0 one (stored before schema 10), is NULL.
-- Corners (x, y): k = 1..4 at (a * ({x} - 1), b * ({y} - 1)) with (a, b) = (0, 0),
-- ({pa}, {pb}), ({qa}, {qb}), (1, 1); {x} and {y} are the pairs columns width or height.
-- Parameters: $runs integer[], $eps double[].
-- Output: run_id, group_id (pair), eps, value.
candidates as (
    select *
    from pairs
    where list_contains($runs, run_id)
),
corners as (
    select k, a, b from (values (1, 0, 0), (2, {pa}, {pb}), (3, {qa}, {qb}), (4, 1, 1)) as c(k, a, b)
),
points as (
    select p.run_id, p.pair_id, c.k,
           cast(c.a * (p.{x} - 1) as double) as x,
           cast(c.b * (p.{y} - 1) as double) as y
    from candidates p
    cross join corners c
    where p.h11 is not null and p.e11 is not null and p.width is not null
),
warped as (
    select t.run_id, t.pair_id, t.k,
           (p.e11 * t.x + p.e12 * t.y + p.e13)
             / nullif(p.e31 * t.x + p.e32 * t.y + p.e33, 0) as ex,
           (p.e21 * t.x + p.e22 * t.y + p.e23)
             / nullif(p.e31 * t.x + p.e32 * t.y + p.e33, 0) as ey,
           (p.h11 * t.x + p.h12 * t.y + p.h13)
             / nullif(p.h31 * t.x + p.h32 * t.y + p.h33, 0) as hx,
           (p.h21 * t.x + p.h22 * t.y + p.h23)
             / nullif(p.h31 * t.x + p.h32 * t.y + p.h33, 0) as hy
    from points t
    join candidates p on p.run_id = t.run_id and p.pair_id = t.pair_id
),
distances as (
    select run_id, pair_id, k, sqrt((ex - hx) * (ex - hx) + (ey - hy) * (ey - hy)) as d
    from warped
),
corner_error as (
    -- summed in corner order, as the reference does
    select run_id, pair_id,
           (max(case when k = 1 then d end) + max(case when k = 2 then d end)
            + max(case when k = 3 then d end) + max(case when k = 4 then d end)) / 4.0::double
             as err
    from distances
    group by run_id, pair_id
),
sweep as (
    select unnest($eps) as eps
)
select p.run_id, p.pair_id as group_id, s.eps,
       case when p.h11 is null or p.width is null or p.height is null then null
            when p.e11 is null then 0.0::double
            when p.e_direction is distinct from 'direct' then null
            when c.err <= s.eps then 1.0::double
            else 0.0::double end as value
from candidates p
cross join sweep s
left join corner_error c on c.run_id = p.run_id and c.pair_id = p.pair_id
