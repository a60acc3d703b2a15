-- ap_ranked: ap under the tie policies that rank one item at a time (`optimistic`,
-- `pessimistic`, `input`, `docid`; the registry chooses this file for them, ap.sql for
-- `grouped`):
--   AP = (1/P) * sum over the retrieved positives of j / i   (VLFeat vl_pr info.ap),
-- the positive at rank i in the policy's order being the j-th positive there. P = 0 -> NULL.
-- A list is read one of three ways, by what list_stats holds (n_scores: the distinct scores
-- of its n_ret retrieved, non-ignored items, or NULL: not counted):
-- * without tied scores (n_scores = n_ret), every policy ranks it as `grouped` does: its
--   (j, i) are the (tp, n) that ingest stored for ap.sql (positive_ranks), read without a sort;
-- * densely tied (n_scores < n_ret and 2 * n_scores <= n_ret: the lists that ingest indexes,
--   sql/lib/tied_ranks.sql, evalstore/ingest/rank_index.py), its k-th positive is at rank
--   n_optimistic, n_pessimistic, n_input or n_docid of tied_ranks: (j, i) = (k, n_<policy>),
--   read without a sort;
-- * any other list (a few ties, or n_scores not counted) is read as its tie groups (the items
--   of one score): a group of n items, p of them positive, after a items and b positives of
--   higher scores, holds the ranks a + 1 .. a + n and the positives b + 1 .. b + p. Only the
--   order within a group differs between policies: `optimistic` puts its positives first,
--   (j, i) = (b + k, a + k) for k = 1 .. p; `pessimistic` last, (b + k, a + n - p + k);
--   `input` and `docid` in the order of their seq, or of their item id (as text, greater
--   first, then seq) as trec_eval does, so that a positive is at i = a + (its place among the
--   group's items), j = b + (its place among the group's positives): a sort within each tie
--   group only, and for those two policies only.
-- Each way gives the same (j, i) as one sort of every row by the policy's keys, so the same
-- terms and (sum_exact) the same bits.
-- Windows are partitioned by list_id, unique across runs, tasks and lists.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id, value (one row per list).
with
-- @include lib/lists.sql
,
tied as (
    -- the retrieved, non-ignored items of the lists with tied scores (or not counted) that
    -- ingest did not index
    select x.list_id, x.item_id, x.score, x.label, x.seq
    from items x
    join lists l on l.list_id = x.list_id
    where x.label <> 0 and x.score is not null
      and (l.n_scores is null or (l.n_scores < l.n_ret and 2 * l.n_scores > l.n_ret))
),
tie_groups as (
    -- one row per tie group: its n items and p positives
    select list_id, score, count(*) as n,
           cast(sum(case when label = 1 then 1 else 0 end) as bigint) as p
    from tied
    group by list_id, score
),
starts as (
    -- a items and b positives before each group (of higher scores)
    select list_id, score, n, p,
           cast(coalesce(sum(n) over w, 0) as bigint) as a,
           cast(coalesce(sum(p) over w, 0) as bigint) as b
    from tie_groups
    window w as (
        partition by list_id order by score desc
        rows between unbounded preceding and 1 preceding
    )
),
by_label as (
    -- the k-th positive of a group, k = 1 .. p, where the policy alone places it: optimistic,
    -- pessimistic, and under input and docid a group without negatives
    select list_id, a, b, n, p, unnest(range(1, p + 1)) as k
    from starts
    where p > 0
      and ($ties in ('optimistic', 'pessimistic') or ($ties in ('input', 'docid') and p = n))
),
mixed as (
    -- input and docid: the items of the groups that hold positives and negatives
    select t.list_id, t.score, t.label, t.item_id, t.seq, s.a, s.b
    from tied t
    join starts s on s.list_id = t.list_id and s.score = t.score
    where $ties in ('input', 'docid') and s.p > 0 and s.p < s.n
),
placed as (
    -- each item's place in its group: by seq, or by item id (greater first) then seq
    select list_id, score, label, a, b,
           row_number() over (partition by list_id, score order by seq) as place
    from mixed
    where $ties = 'input'
    union all
    select list_id, score, label, a, b,
           row_number() over (partition by list_id, score order by item_id desc, seq) as place
    from mixed
    where $ties = 'docid'
),
in_group as (
    -- a positive's place among its group's positives
    select list_id, a, b, place,
           row_number() over (partition by list_id, score order by place) as k
    from placed
    where label = 1
),
precisions as (
    -- j / i at each positive
    select l.run_id, l.list_id, cast(p.tp as double) / nullif(cast(p.n as double), 0) as p
    from positive_ranks p
    join lists l on l.list_id = p.list_id
    where l.n_scores = l.n_ret
    union all
    select l.run_id, l.list_id,
           cast(t.k as double)
             / nullif(cast(case when $ties = 'optimistic' then t.n_optimistic
                                when $ties = 'pessimistic' then t.n_pessimistic
                                when $ties = 'input' then t.n_input
                                else t.n_docid end as double), 0) as p
    from tied_ranks t
    join lists l on l.list_id = t.list_id
    where l.n_scores < l.n_ret and 2 * l.n_scores <= l.n_ret
    union all
    select l.run_id, l.list_id,
           cast(g.b + g.k as double)
             / nullif(cast(case when $ties = 'pessimistic' then g.a + g.n - g.p + g.k
                                else g.a + g.k end as double), 0) as p
    from by_label g
    join lists l on l.list_id = g.list_id
    union all
    select l.run_id, l.list_id,
           cast(r.b + r.k as double) / nullif(cast(r.a + r.place as double), 0) as p
    from in_group r
    join lists l on l.list_id = r.list_id
),
per_list as (
    select list_id, sum_exact(p) as s from precisions group by list_id
)
select l.run_id, l.group_id,
       case when l.n_pos = 0 then null
            else coalesce(p.s, 0.0::double) / nullif(cast(l.n_pos as double), 0) end as value
from lists l
left join per_list p on p.list_id = l.list_id
