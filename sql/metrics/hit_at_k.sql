-- hit_at_k: 1 when a positive is among the top k retrieved items, else 0 (trec_eval
-- success_k). Ties: under `grouped` the probability over a random order of each tie group:
-- when the first tie group holding a positive (first rank a, n items, r positives) is cut
-- by k, with m = k - a + 1 of its places in the top k, 1 - C(n - r, m) / C(n, m), the
-- product 1 - prod_(i = 0 .. m - 1) (n - r - i) / (n - i) (as exp of a sum of logs); the
-- other policies put one item at each rank. P = 0 -> NULL.
-- Parameters: $runs integer[], $task varchar, $ties varchar, $k integer >= 1.
-- Output: run_id, group_id, value (one row per list).
with
cutoff as (
    select cast($k as bigint) as k
),
-- @include lib/graded_ranks.sql source=scores
,
-- @include lib/first_hit.sql
,
cut as (
    -- the first group with a positive, cut by k with m of its places in the top k and no
    -- certain hit (m <= n - r)
    select f.run_id, f.list_id, f.n, f.r, c.k - f.a + 1 as m
    from first_hit f
    cross join cutoff c
    where f.a <= c.k and c.k - f.a + 1 < f.n and c.k - f.a + 1 <= f.n - f.r
),
misses as (
    -- i = 0 .. m - 1: the chance that the i-th place of the top k holds no positive either
    select run_id, list_id, n, r, unnest(range(0, m)) as i
    from cut
),
missed as (
    -- the logs (each in [-ln(n), 0]) added by sum_exact at 2^80: the same bits on any number
    -- of threads
    select run_id, list_id,
           exp(sum_exact(ln(cast(n - r - i as double) / nullif(cast(n - i as double), 0)), 80))
             as p
    from misses
    group by run_id, list_id
)
select l.run_id, l.group_id,
       case when l.n_pos = 0 then null
            when f.a is null or f.a > c.k then 0.0::double
            when m.p is null then 1.0::double
            else 1.0::double - m.p end as value
from lists l
cross join cutoff c
left join first_hit f on f.run_id = l.run_id and f.list_id = l.list_id
left join missed m on m.run_id = l.run_id and m.list_id = l.list_id
