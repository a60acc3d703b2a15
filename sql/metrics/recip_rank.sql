-- recip_rank: the reciprocal rank 1 / r of the first retrieved positive, 0 when none is
-- retrieved (trec_eval recip_rank; its mean over lists is MRR). Ties: under `grouped` the
-- expected value over a random order of the first tie group holding a positive: with its
-- first rank a, its n items and r positives, the first positive is at rank a + j - 1 with
-- probability P_j = C(n - j, r - 1) / C(n, r), j = 1 .. n - r + 1, computed as
-- P_1 = r / n, P_(j+1) = P_j * (n - r - j + 1) / (n - j) (a product as exp of a sum of logs);
-- the other policies put one item at each rank (n = r = 1). P = 0 -> NULL.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id, value (one row per list).
with
cutoff as (
    select cast(2147483647 as bigint) as k  -- unused: no cut-off
),
-- @include lib/graded_ranks.sql source=scores
,
-- @include lib/first_hit.sql
,
places as (
    -- j: the place of the first positive within its tie group
    select run_id, list_id, a, n, r, unnest(range(1, n - r + 2)) as j
    from first_hit
),
steps as (
    -- the log of P_(j+1) / P_j (0 at the last place, where no next one follows)
    select run_id, list_id, a, n, r, j,
           case when n - r - j + 1 > 0
                then ln(cast(n - r - j + 1 as double) / nullif(cast(n - j as double), 0))
                else 0.0::double end as step
    from places
),
chances as (
    -- P_j = P_1 * exp(the steps before j), the logs added by sum_exact at 2^80 (each at most
    -- ln(n) < 2^5: the sums stay below 2^116)
    select run_id, list_id, a, j,
           cast(r as double) / nullif(cast(n as double), 0)
             * exp(coalesce(sum_exact(step, 80) over (
                   partition by list_id order by j
                   rows between unbounded preceding and 1 preceding), 0.0::double)) as p
    from steps
),
expected as (
    select run_id, list_id, sum_exact(p / nullif(cast(a + j - 1 as double), 0)) as rr
    from chances
    group by run_id, list_id
)
select l.run_id, l.group_id,
       case when l.n_pos = 0 then null else coalesce(e.rr, 0.0::double) end as value
from lists l
left join expected e on e.run_id = l.run_id and e.list_id = l.list_id
