-- The ranked items of the graded and first-hit metrics, with their gains, grouped into tie
-- groups. Needs a CTE `cutoff(k)`: the cut-off k of the metric (a metric without one gives a
-- k past every rank). Parameters: $runs integer[]; $task varchar; $ties 'grouped' |
-- 'optimistic' | 'pessimistic' | 'input' | 'docid'.
-- CTEs it defines: those of lib/lists.sql (items, lists), and
--   judged(run_id, list_id, item_id, score, label, seq, gain, gain_exp): the non-ignored items
--       (retrieved or not) with their gain: the stored one, else 1 for a +1 label and 0 for a
--       -1, and gain_exp = 2^gain - 1, each divided by the power of two at or above the
--       largest of its list (a ratio of two sums of them, nDCG, does not change);
--   ranked(run_id, list_id, score, label, gain, gain_exp, rn): the retrieved ones, rn = 1,
--       2, ... in ranking order (under `grouped` the order within a tie is by seq, which
--       nothing below depends on);
--   tie_groups(run_id, list_id, a, n, r, g, g_exp, d, d_k): one row per tie group (under
--       `grouped` the items of one score, else each item alone): its first rank a, its n
--       items, r of them positive, the sums g and g_exp of their (scaled) gains, and the sums
--       d and d_k of the discounts 1 / log2(rank + 1) of its ranks (d_k: of those within the
--       top k), each added in fixed point: the same bits on any number of threads.
-- @include lib/lists.sql
,
given as (
    select s.run_id, s.list_id, s.item_id, s.score, s.label, s.seq,
           coalesce(s.gain, case when s.label = 1 then 1.0::double else 0.0::double end) as g
    from scores s
    where list_contains($runs, s.run_id) and s.task = $task and s.label <> 0
),
judged as (
    -- each gain divided by u, the power of two at or above its list's largest gain (u >= 1):
    -- exact, and u cancels in every nDCG; gains in [0, 1] then add in fixed point
    select run_id, list_id, item_id, score, label, seq,
           g / nullif(pow(2.0::double, ceil(log2(greatest(
               max(g) over (partition by list_id), 1.0::double)))), 0) as gain,
           (pow(2.0::double, g) - 1.0::double) / nullif(pow(2.0::double, ceil(log2(greatest(
               max(pow(2.0::double, g) - 1.0::double) over (partition by list_id),
               1.0::double)))), 0) as gain_exp
    from given
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
    -- the sums of terms in [0, 1] in fixed point: each scaled by 2^90 and rounded, added as
    -- decimal(38, 0), exactly, in any order (docs/metrics.md, "Determinism")
    select run_id, list_id, min(rn) as a, count(*) as n,
           cast(sum(case when label = 1 then 1 else 0 end) as bigint) as r,
           cast(sum(cast(gain * pow(2, 90) as decimal(38, 0))) as double) * pow(2, -90) as g,
           cast(sum(cast(gain_exp * pow(2, 90) as decimal(38, 0))) as double) * pow(2, -90)
             as g_exp,
           cast(sum(cast(disc * pow(2, 90) as decimal(38, 0))) as double) * pow(2, -90) as d,
           cast(sum(cast(disc_k * pow(2, 90) as decimal(38, 0))) as double) * pow(2, -90)
             as d_k
    from discounted
    group by run_id, list_id,
             case when $ties = 'grouped' then score else cast(rn as double) end
)
