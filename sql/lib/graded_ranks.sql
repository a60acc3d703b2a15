-- The ranked items of the graded and first-hit metrics, with their gains, grouped into tie
-- groups. Needs a CTE `cutoff(k)`: the cut-off k of the metric (a metric without one gives a
-- k past every rank). Parameters: $runs integer[]; $task varchar; $ties 'grouped' |
-- 'optimistic' | 'pessimistic' | 'input' | 'docid'. The include's `source`: the rows it reads (`scores`, or a
-- CTE of those rows that the including query reads this way).
-- CTEs it defines: those of lib/lists.sql (items, lists), and
--   judged(run_id, list_id, item_id, score, label, seq, gain, gain_exp, gain_one,
--       gain_exp_one): the non-ignored items (retrieved or not) with their gain: the stored
--       one, else 1 for a +1 label and 0 for a -1, and gain_exp = 2^gain - 1, each divided by
--       the power of two at or above the largest of its list (a ratio of two sums of them,
--       nDCG, does not change); gain_one and gain_exp_one: a gain of 1 divided so;
--   ranked(run_id, list_id, score, label, gain, gain_exp, rn): under a per-rank policy the
--       retrieved ones, rn = 1, 2, ... in ranking order (no rows under `grouped`);
--   tie_groups(run_id, list_id, a, n, r, g, g_exp, d_k): one row per tie group (under
--       `grouped` the items of one score, else each item alone): its first rank a, its n
--       items, r of them positive, the sums g and g_exp of their (scaled) gains, and the sum
--       d_k of the discounts 1 / log2(rank + 1) of its ranks within the top k, each by
--       sum_exact: the same bits on any number of threads. Under `grouped` no row is sorted:
--       the items are counted and summed per score, the groups ordered by score (a = 1 +
--       the items of higher scores), and a group's ranks a .. a + n - 1 (those within the top
--       k) are generated to sum their discounts.
-- @include lib/lists.sql
,
given as (
    select s.run_id, s.list_id, s.item_id, s.score, s.label, s.seq,
           coalesce(s.gain, case when s.label = 1 then 1.0::double else 0.0::double end) as g
    from {source} s
    where list_contains($runs, s.run_id) and s.task = $task and s.label <> 0
),
scales as (
    -- per list: c and e, the exponents of u, the power of two at or above the list's largest
    -- gain (u >= 1), and of the largest 2^gain - 1 (beyond 2^52, where 2^g - 1 is 2^g as a
    -- double, and 2^g overflows from g = 1024, e is ceil(g)); 2^-c and 2^-e
    select list_id, c, e, pow(2.0::double, -c) as inv_c, pow(2.0::double, -e) as inv_e
    from (
        select list_id,
               ceil(log2(greatest(top, 1.0::double))) as c,
               case when top > 52.0::double
                    then ceil(top)
                    else ceil(log2(greatest(pow(2.0::double, top) - 1.0::double, 1.0::double)))
               end as e
        from (select list_id, max(g) as top from given group by list_id) m
    ) t
),
judged as (
    -- each gain times 2^-c, and 2^gain - 1 times 2^-e (2^(g - e) - 2^-e: no overflow): exact,
    -- and the factor cancels in every nDCG; gains in [0, 1] then add in fixed point.
    -- gain_one, gain_exp_one: a gain of 1 so scaled (an n_positives override's positives)
    select x.run_id, x.list_id, x.item_id, x.score, x.label, x.seq,
           x.g * u.inv_c as gain,
           pow(2.0::double, x.g - u.e) - u.inv_e as gain_exp,
           u.inv_c as gain_one,
           u.inv_e as gain_exp_one
    from given x
    join scales u on u.list_id = x.list_id
),
score_groups as (
    -- under `grouped`: the retrieved items of each score, counted and summed
    select run_id, list_id, score, count(*) as n,
           cast(sum(case when label = 1 then 1 else 0 end) as bigint) as r,
           sum_exact(gain) as g,
           sum_exact(gain_exp) as g_exp
    from judged
    where score is not null and $ties = 'grouped'
    group by run_id, list_id, score
),
score_starts as (
    -- a: the group's first rank, after the items of higher scores
    select run_id, list_id, n, r, g, g_exp,
           1 + cast(coalesce(sum(n) over (
               partition by list_id order by score desc
               rows between unbounded preceding and 1 preceding
           ), 0) as bigint) as a
    from score_groups
),
score_ranks as (
    -- the ranks of each group within the top k
    select s.list_id, s.a, unnest(range(s.a, least(s.a + s.n, c.k + 1))) as rn
    from score_starts s
    cross join cutoff c
    where s.a <= c.k
),
score_discounts as (
    select list_id, a, sum_exact(1.0::double / nullif(log2(rn + 1.0::double), 0)) as d_k
    from score_ranks
    group by list_id, a
),
ranked as (
    -- under a per-rank policy: the tie-break keys of lib/ranking_points.sql, then the input
    -- order (an item id key only under docid, where it is the second key)
    select run_id, list_id, score, label, gain, gain_exp,
           row_number() over (
               partition by list_id
               order by score desc,
                        case when $ties = 'optimistic' then -label
                             when $ties = 'pessimistic' then label else 0 end,
                        seq
           ) as rn
    from judged
    where score is not null and $ties in ('optimistic', 'pessimistic', 'input')
    union all
    select run_id, list_id, score, label, gain, gain_exp,
           row_number() over (partition by list_id order by score desc, item_id desc, seq) as rn
    from judged
    where score is not null and $ties = 'docid'
),
tie_groups as (
    -- sums of terms in [0, 1], exact in any order (sum_exact: docs/metrics.md, "Determinism");
    -- a group past the top k has d_k = 0
    select s.run_id, s.list_id, s.a, s.n, s.r, s.g, s.g_exp,
           coalesce(d.d_k, 0.0::double) as d_k
    from score_starts s
    left join score_discounts d on d.list_id = s.list_id and d.a = s.a
    union all
    select r.run_id, r.list_id, r.rn as a, cast(1 as bigint) as n,
           cast(case when r.label = 1 then 1 else 0 end as bigint) as r,
           sum_exact(r.gain) as g,
           sum_exact(r.gain_exp) as g_exp,
           sum_exact(case when r.rn <= c.k then 1.0::double / nullif(log2(r.rn + 1.0::double), 0)
                          else 0.0::double end) as d_k
    from ranked r
    cross join cutoff c
    group by r.run_id, r.list_id, r.rn, r.label
)
