-- nDCG of every list, with the gain column {gain} (gain: linear, gain_exp: 2^gain - 1) and
-- the cut-off of `cutoff(k)`: DCG = sum over tie groups of (sum of their gains) * (mean of
-- their discounts within the top k): under `grouped` ties the expected DCG over a random
-- order of each tie group, else the plain sum of gain / log2(rank + 1). IDCG: the same over
-- the list's judged items (retrieved or not) in decreasing order of gain, cut at k
-- (trec_eval m_ndcg.c and m_ndcg_cut.c), and the positives a groups file's n_positives counts
-- beyond the +1 labels, not retrieved, of gain 1 (docs/metrics.md). nDCG = DCG / IDCG, NULL
-- when IDCG = 0. Both sums by sum_exact, so the same rows give the same bits. No item is
-- sorted under `grouped` ties: tie groups and distinct gains are counted, and only their
-- ranks are generated.
-- Under `grouped` ties a list whose rows carry no gain (gains 1 for +1 labels, 0 else: the
-- same under gain and gain_exp) and whose ties ingest indexed (none, n_scores = n_ret, or
-- dense: sql/lib/tied_ranks.sql) is read from that index instead of its rows (binary_lists):
-- its tie groups that hold positives are those of positive_ranks (the end e = n of each and
-- its r positives); a group's first rank a is e itself without ties, else n_optimistic - r + 1
-- of its last positive (k = tp) in tied_ranks. The same groups (a, n = e - a + 1, g = r), the
-- same discounts, and the ideal order's gains of 1 at positions 1 .. greatest(n_pos, the +1
-- labels), give the same terms, so the same bits; a group without positives adds 0.
-- Parameters and CTEs: those of lib/graded_ranks.sql; defines ndcg(run_id, group_id, value).
binary_lists as (
    select c.list_id, c.n_pos_labels, c.n_scores = c.n_ret as untied
    from groups g
    join list_stats c on c.list_id = g.list_id
    where list_contains($runs, g.run_id) and g.task = $task and $ties = 'grouped'
      and (c.n_scores = c.n_ret or (c.n_scores < c.n_ret and 2 * c.n_scores <= c.n_ret))
      and c.list_id not in (
          select s.list_id from scores s
          where list_contains($runs, s.run_id) and s.task = $task and s.gain is not null
      )
),
graded_rows as (
    -- the rows of the other lists
    select * from scores where list_id not in (select list_id from binary_lists)
),
-- @include lib/graded_ranks.sql source=graded_rows
,
index_groups as (
    -- a binary list's tie groups that hold positives: first rank a, last e, r positives
    select i.list_id, i.e, i.r, case when b.untied then i.e else t.n_optimistic - i.r + 1 end as a
    from (
        select list_id, tp, n as e, count(*) as r
        from positive_ranks
        where list_id in (select list_id from binary_lists)
        group by list_id, tp, n
    ) i
    join binary_lists b on b.list_id = i.list_id
    left join tied_ranks t on t.list_id = i.list_id and t.k = i.tp and not b.untied
),
index_ranks as (
    select s.list_id, s.a, s.e, s.r, unnest(range(s.a, least(s.e, c.k) + 1)) as rn
    from index_groups s
    cross join cutoff c
    where s.a <= c.k
),
index_terms as (
    select list_id, cast(r as double) as g, cast(e - a + 1 as bigint) as n,
           sum_exact(1.0::double / nullif(log2(rn + 1.0::double), 0)) as d_k
    from index_ranks
    group by list_id, a, e, r
),
dcg as (
    -- each term at most n (a group's scaled gains times its mean discount): the sum stays
    -- below 2^121 at sum_exact's scale of 2^90
    select run_id, list_id, sum_exact({gain_sum} * (d_k / nullif(cast(n as double), 0))) as dcg
    from tie_groups
    group by run_id, list_id
    union all
    select l.run_id, l.list_id, sum_exact(t.g * (t.d_k / nullif(cast(t.n as double), 0))) as dcg
    from index_terms t
    join lists l on l.list_id = t.list_id
    group by l.run_id, l.list_id
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
    where l.n_pos > coalesce(p.n, 0) and l.list_id not in (select list_id from binary_lists)
),
ideal_gains as (
    -- the ideal order needs no sort of items: each distinct gain of a list with its count c,
    -- after o items of greater gains, holds the positions o + 1 .. o + c
    select run_id, list_id, {gain}, count(*) as c
    from (
        select run_id, list_id, {gain} from judged
        union all
        select u.run_id, u.list_id, coalesce(o.one, 1.0::double) as {gain}
        from unlisted u
        left join (select distinct list_id, {gain}_one as one from judged) o
          on o.list_id = u.list_id
    ) j
    group by run_id, list_id, {gain}
),
ideal_order as (
    -- the positions within the top k of the nonzero gains (a list whose gains are all 0
    -- has no row: its IDCG is NULL rather than 0, and its nDCG NULL either way)
    select s.run_id, s.list_id, s.{gain},
           unnest(range(s.o + 1, least(s.o + s.c, c.k) + 1)) as pos
    from (
        select run_id, list_id, {gain}, c,
               cast(coalesce(sum(c) over (
                   partition by list_id order by {gain} desc
                   rows between unbounded preceding and 1 preceding
               ), 0) as bigint) as o
        from ideal_gains
    ) s
    cross join cutoff c
    where s.o < c.k and s.{gain} <> 0.0::double  -- a gain of 0 adds 0
),
index_ideal as (
    -- a binary list's ideal order: its gains of 1 (the +1 labels, or n_pos if more) first
    select l.run_id, l.list_id,
           unnest(range(1, least(greatest(l.n_pos, b.n_pos_labels), c.k) + 1)) as pos
    from lists l
    join binary_lists b on b.list_id = l.list_id
    cross join cutoff c
),
ideal as (
    select run_id, list_id,
           sum_exact({gain} / nullif(log2(pos + 1.0::double), 0)) as ideal
    from ideal_order
    group by run_id, list_id
    union all
    select run_id, list_id, sum_exact(1.0::double / nullif(log2(pos + 1.0::double), 0)) as ideal
    from index_ideal
    group by run_id, list_id
),
ndcg as (
    select l.run_id, l.group_id,
           case when i.ideal > 0 then coalesce(d.dcg, 0.0::double) / nullif(i.ideal, 0) end
             as value
    from lists l
    left join dcg d on d.run_id = l.run_id and d.list_id = l.list_id
    left join ideal i on i.run_id = l.run_id and i.list_id = l.list_id
)
