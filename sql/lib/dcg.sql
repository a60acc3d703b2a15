-- nDCG of every list, with the gain column {gain} (gain: linear, gain_exp: 2^gain - 1) and
-- the cut-off of `cutoff(k)`: DCG = sum over tie groups of (sum of their gains) * (mean of
-- their discounts within the top k): under `grouped` ties the expected DCG over a random
-- order of each tie group, else the plain sum of gain / log2(rank + 1). IDCG: the same over
-- the list's judged items (retrieved or not) in decreasing order of gain, cut at k
-- (trec_eval m_ndcg.c and m_ndcg_cut.c), and the positives a groups file's n_positives counts
-- beyond the +1 labels, not retrieved, of gain 1 (docs/metrics.md). nDCG = DCG / IDCG, NULL
-- when IDCG = 0. Both sums by sum_exact, so the same rows give the same bits.
-- Parameters and CTEs: those of lib/graded_ranks.sql; defines ndcg(run_id, group_id, value).
-- @include lib/graded_ranks.sql
,
dcg as (
    -- each term at most n (a group's scaled gains times its mean discount): the sum stays
    -- below 2^121 at sum_exact's scale of 2^90
    select run_id, list_id, sum_exact({gain_sum} * (d_k / nullif(cast(n as double), 0))) as dcg
    from tie_groups
    group by run_id, list_id
),
unlisted as (
    -- the positives an n_positives override counts beyond the list's +1 labels: judged
    -- relevant but in no row, so not retrieved; each of gain 1 (a +1 label's gain when no
    -- grade is given), in the ideal order only, the first k of them at most
    select l.run_id, l.list_id,
           unnest(range(0, least(l.n_pos - coalesce(p.n, 0), c.k))) as i
    from lists l
    cross join cutoff c
    left join (select list_id, count(*) as n from judged where label = 1 group by list_id) p
      on p.list_id = l.list_id
    where l.n_pos > coalesce(p.n, 0)
),
ideal_order as (
    select run_id, list_id, {gain},
           row_number() over (partition by list_id order by {gain} desc) as pos
    from (
        select run_id, list_id, {gain} from judged
        union all
        select u.run_id, u.list_id, coalesce(o.one, 1.0::double) as {gain}
        from unlisted u
        left join (select distinct list_id, {gain}_one as one from judged) o
          on o.list_id = u.list_id
    ) j
),
ideal as (
    select i.run_id, i.list_id,
           sum_exact(case when i.pos <= c.k then i.{gain} / nullif(log2(i.pos + 1.0::double), 0)
                          else 0.0::double end) as ideal
    from ideal_order i
    cross join cutoff c
    group by i.run_id, i.list_id
),
ndcg as (
    select l.run_id, l.group_id,
           case when i.ideal > 0 then coalesce(d.dcg, 0.0::double) / nullif(i.ideal, 0) end
             as value
    from lists l
    left join dcg d on d.run_id = l.run_id and d.list_id = l.list_id
    left join ideal i on i.run_id = l.run_id and i.list_id = l.list_id
)
