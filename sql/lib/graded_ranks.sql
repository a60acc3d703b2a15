-- The ranked items of the graded and first-hit metrics, with their gains, grouped into tie
-- groups. Needs a CTE `cutoff(k)`: the cut-off k of the metric (a metric without one gives a
-- k past every rank). Parameters: $runs integer[]; $task varchar; $ties 'grouped' |
-- 'optimistic' | 'pessimistic' | 'input' | 'docid'.
-- CTEs it defines: those of lib/lists.sql (items, lists), and
--   judged(run_id, list_id, item_id, score, label, seq, gain, gain_exp): the non-ignored items
--       (retrieved or not) with their gain: the stored one, else 1 for a +1 label and 0 for a
--       -1; gain_exp = 2^gain - 1;
--   ranked(run_id, list_id, score, label, gain, gain_exp, rn): the retrieved ones, rn = 1,
--       2, ... in ranking order (under `grouped` the order within a tie is by seq, which
--       nothing below depends on);
--   tie_groups(run_id, list_id, a, n, r, g, g_exp, d, d_k): one row per tie group (under
--       `grouped` the items of one score, else each item alone): its first rank a, its n
--       items, r of them positive, the sums g and g_exp of their gains, and the sums d and d_k
--       of the discounts 1 / log2(rank + 1) of its ranks (d_k: of those within the top k).
-- @include lib/lists.sql
,
judged as (
    select s.run_id, s.list_id, s.item_id, s.score, s.label, s.seq,
           coalesce(s.gain, case when s.label = 1 then 1.0::double else 0.0::double end) as gain,
           pow(2.0::double, coalesce(s.gain, case when s.label = 1 then 1.0::double
                                                 else 0.0::double end)) - 1.0::double as gain_exp
    from scores s
    where list_contains($runs, s.run_id) and s.task = $task and s.label <> 0
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
tie_groups as (
    select r.run_id, r.list_id, min(r.rn) as a, count(*) as n,
           cast(sum(case when r.label = 1 then 1 else 0 end) as bigint) as r,
           sum(r.gain) as g, sum(r.gain_exp) as g_exp,
           sum(1.0::double / nullif(log2(r.rn + 1.0::double), 0)) as d,
           sum(case when r.rn <= c.k
                    then 1.0::double / nullif(log2(r.rn + 1.0::double), 0)
                    else 0.0::double end) as d_k
    from ranked r
    cross join cutoff c
    group by r.run_id, r.list_id,
             case when $ties = 'grouped' then r.score else cast(r.rn as double) end
)
