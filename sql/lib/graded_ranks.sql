-- The ranked items of the graded and first-hit metrics, with their gains, grouped into tie
-- groups. Needs a CTE `cutoff(k)`: the cut-off k of the metric (a metric without one gives a
-- k past every rank). Parameters: $runs integer[]; $task varchar; $ties 'grouped' |
-- 'optimistic' | 'pessimistic' | 'input' | 'docid'.
-- CTEs it defines: those of lib/lists.sql (items, lists), and
--   judged(run_id, list_id, item_id, score, label, seq, gain, gain_exp, gain_one,
--       gain_exp_one): the non-ignored items (retrieved or not) with their gain: the stored
--       one, else 1 for a +1 label and 0 for a -1, and gain_exp = 2^gain - 1, each divided by
--       the power of two at or above the largest of its list (a ratio of two sums of them,
--       nDCG, does not change); gain_one and gain_exp_one: a gain of 1 divided so;
--   ranked(run_id, list_id, score, label, gain, gain_exp, rn): the retrieved ones, rn = 1,
--       2, ... in ranking order (under `grouped` the order within a tie is by seq, which
--       nothing below depends on);
--   tie_groups(run_id, list_id, a, n, r, g, g_exp, d, d_k): one row per tie group (under
--       `grouped` the items of one score, else each item alone): its first rank a, its n
--       items, r of them positive, the sums g and g_exp of their (scaled) gains, and the sums
--       d and d_k of the discounts 1 / log2(rank + 1) of its ranks (d_k: of those within the
--       top k), each by sum_exact: the same bits on any number of threads.
-- @include lib/lists.sql
,
given as (
    select s.run_id, s.list_id, s.item_id, s.score, s.label, s.seq,
           coalesce(s.gain, case when s.label = 1 then 1.0::double else 0.0::double end) as g
    from scores s
    where list_contains($runs, s.run_id) and s.task = $task and s.label <> 0
),
scaled as (
    -- c and e: the exponents of u, the power of two at or above the list's largest gain
    -- (u >= 1), and of the largest 2^gain - 1; beyond 2^52, where 2^g - 1 is 2^g as a double
    -- (and 2^g overflows from g = 1024), e is ceil(g)
    select *,
           ceil(log2(greatest(max(g) over (partition by list_id), 1.0::double))) as c,
           case when max(g) over (partition by list_id) > 52.0::double
                then ceil(max(g) over (partition by list_id))
                else ceil(log2(greatest(
                    pow(2.0::double, max(g) over (partition by list_id)) - 1.0::double,
                    1.0::double)))
           end as e
    from given
),
judged as (
    -- each gain times 2^-c, and 2^gain - 1 times 2^-e (2^(g - e) - 2^-e: no overflow): exact,
    -- and the factor cancels in every nDCG; gains in [0, 1] then add in fixed point.
    -- gain_one, gain_exp_one: a gain of 1 so scaled (an n_positives override's positives)
    select run_id, list_id, item_id, score, label, seq,
           g * pow(2.0::double, -c) as gain,
           pow(2.0::double, g - e) - pow(2.0::double, -e) as gain_exp,
           pow(2.0::double, -c) as gain_one,
           pow(2.0::double, -e) as gain_exp_one
    from scaled
),
ranked as (
    -- the tie-break keys of lib/ranking_points.sql, then the input order
    select run_id, list_id, score, label, gain, gain_exp,
           row_number() over (
               partition by list_id
               order by score desc,
                        case when $ties = 'optimistic' then -label
                             when $ties = 'pessimistic' then label else 0 end,
                        case when $ties = 'docid' then item_id end desc,
                        seq
           ) as rn
    from judged
    where score is not null
),
discounted as (
    select r.run_id, r.list_id, r.score, r.rn, r.label, r.gain, r.gain_exp,
           1.0::double / nullif(log2(r.rn + 1.0::double), 0) as disc,
           case when r.rn <= c.k then 1.0::double / nullif(log2(r.rn + 1.0::double), 0)
                else 0.0::double end as disc_k
    from ranked r
    cross join cutoff c
),
tie_groups as (
    -- sums of terms in [0, 1], exact in any order (sum_exact: docs/metrics.md, "Determinism")
    select run_id, list_id, min(rn) as a, count(*) as n,
           cast(sum(case when label = 1 then 1 else 0 end) as bigint) as r,
           sum_exact(gain) as g,
           sum_exact(gain_exp) as g_exp,
           sum_exact(disc) as d,
           sum_exact(disc_k) as d_k
    from discounted
    group by run_id, list_id,
             case when $ties = 'grouped' then score else cast(rn as double) end
)
