-- ap_ranked: ap under the tie policies that rank one item at a time (`optimistic`,
-- `pessimistic`, `input`, `docid`; the registry chooses this file for them, ap.sql for
-- `grouped`):
--   AP = (1/P) * sum over the retrieved positives of j / i   (VLFeat vl_pr info.ap),
-- the positive at rank i in the policy's order being the j-th positive there. P = 0 -> NULL.
-- Nothing is sorted: ingest stored the ranks. A list without tied scores is ranked alike by
-- every policy: its (j, i) are the (tp, n) that ingest stored for ap.sql (positive_ranks). A
-- list with tied scores has a row per retrieved positive in tied_ranks
-- (sql/lib/tied_ranks.sql, evalstore/ingest/rank_index.py): its k-th positive is at rank
-- n_optimistic, n_pessimistic, n_input or n_docid, so (j, i) = (k, n_<policy>): the same
-- (j, i) as one sort of every row by the policy's keys, so the same terms and (sum_exact)
-- the same bits.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id, value (one row per list).
with
-- @include lib/lists.sql
,
tied_lists as (
    -- the lists with tied scores (those with rows in tied_ranks)
    select distinct t.list_id
    from tied_ranks t
    join lists l on l.list_id = t.list_id
),
precisions as (
    -- j / i at each positive
    select l.run_id, l.list_id, cast(p.tp as double) / nullif(cast(p.n as double), 0) as p
    from positive_ranks p
    join lists l on l.list_id = p.list_id
    left join tied_lists t on t.list_id = p.list_id
    where t.list_id is null
    union all
    select l.run_id, l.list_id,
           cast(t.k as double)
             / nullif(cast(case when $ties = 'optimistic' then t.n_optimistic
                                when $ties = 'pessimistic' then t.n_pessimistic
                                when $ties = 'input' then t.n_input
                                else t.n_docid end as double), 0) as p
    from tied_ranks t
    join lists l on l.list_id = t.list_id
),
per_list as (
    select list_id, sum_exact(p) as s from precisions group by list_id
)
select l.run_id, l.group_id,
       case when l.n_pos = 0 then null
            else coalesce(p.s, 0.0::double) / nullif(cast(l.n_pos as double), 0) end as value
from lists l
left join per_list p on p.list_id = l.list_id
