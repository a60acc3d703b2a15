-- The per-rank index in SQL (sql/schema/019_tied_ranks.sql): per retrieved positive of each
-- densely tied list of `scores`, the rank of its k-th positive (k = 1 .. p_ret) under each
-- per-rank policy's order (the keys of lib/ranking_points.sql: score, then optimistic:
-- positives first, pessimistic: negatives first, input: seq, docid: the greater item id as
-- text first, then seq). Densely tied, by what list_stats holds: fewer distinct scores than
-- retrieved, non-ignored rows, and at most half as many (n_scores < n_ret and
-- 2 * n_scores <= n_ret; NULL n_scores, not counted: not indexed), the rule of
-- evalstore/ingest/rank_index.py and metrics/ap_ranked.sql. Any other list has no row: one
-- without tied scores is ranked by every policy as `grouped` does, and ap_ranked sorts the
-- tie groups of the others. Within one group of tied scores the policies differ only in
-- which of its ranks the group's positives take.
-- CTEs it defines: ranked_rows, tied_lists, orders, optimistic, pessimistic, by_input,
--   by_docid and tied_points(list_id, k, n_optimistic, n_pessimistic, n_input, n_docid).
ranked_rows as (
    select list_id, score, label, seq, item_id
    from scores
    where label <> 0 and score is not null
),
tied_lists as (
    select list_id from list_stats where n_scores < n_ret and 2 * n_scores <= n_ret
),
orders as (
    select r.list_id, r.label,
           row_number() over (partition by r.list_id order by r.score desc, -r.label, r.seq)
             as n_optimistic,
           row_number() over (partition by r.list_id order by r.score desc, r.label, r.seq)
             as n_pessimistic,
           row_number() over (partition by r.list_id order by r.score desc, r.seq) as n_input,
           row_number() over (partition by r.list_id order by r.score desc, r.item_id desc, r.seq)
             as n_docid
    from ranked_rows r
    join tied_lists t on t.list_id = r.list_id
),
optimistic as (
    select list_id, n_optimistic as n,
           row_number() over (partition by list_id order by n_optimistic) as k
    from orders where label = 1
),
pessimistic as (
    select list_id, n_pessimistic as n,
           row_number() over (partition by list_id order by n_pessimistic) as k
    from orders where label = 1
),
by_input as (
    select list_id, n_input as n, row_number() over (partition by list_id order by n_input) as k
    from orders where label = 1
),
by_docid as (
    select list_id, n_docid as n, row_number() over (partition by list_id order by n_docid) as k
    from orders where label = 1
),
tied_points as (
    select o.list_id, cast(o.k as integer) as k, cast(o.n as integer) as n_optimistic,
           cast(p.n as integer) as n_pessimistic, cast(i.n as integer) as n_input,
           cast(d.n as integer) as n_docid
    from optimistic o
    join pessimistic p on p.list_id = o.list_id and p.k = o.k
    join by_input i on i.list_id = o.list_id and i.k = o.k
    join by_docid d on d.list_id = o.list_id and d.k = o.k
)
