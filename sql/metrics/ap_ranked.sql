-- ap_ranked: ap under the tie policies that rank one item at a time (`optimistic`,
-- `pessimistic`, `input`, `docid`; the registry chooses this file for them, ap.sql for
-- `grouped`):
--   AP = (1/P) * sum over the retrieved positives of j / i   (VLFeat vl_pr info.ap),
-- the positive at rank i in the policy's order being the j-th positive there. P = 0 -> NULL.
-- A list without tied scores (list_stats.n_scores = n_ret) is ranked alike by every policy:
-- its (j, i) are the (tp, n) that ingest stored for ap.sql, read without a sort.
-- Windows are partitioned by list_id, unique across runs, tasks and lists.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id, value (one row per list).
with
-- @include lib/lists.sql
,
ranked as (
    -- the retrieved, non-ignored items of the lists with tied scores (or not counted), with
    -- their rank i in the policy's order (the tie-break keys of lib/ranking_points.sql)
    select x.run_id, x.list_id, x.label,
           row_number() over (
               partition by x.list_id
               order by x.score desc,
                        case when $ties = 'optimistic' then -x.label
                             when $ties = 'pessimistic' then x.label else 0 end,
                        case when $ties = 'docid' then x.item_id end desc,
                        x.seq
           ) as i
    from items x
    join lists l on l.list_id = x.list_id
    where x.label <> 0 and x.score is not null and (l.n_scores is null or l.n_scores < l.n_ret)
),
precisions as (
    -- j / i at each positive: j counts the positives up to rank i
    select run_id, list_id,
           cast(row_number() over (partition by list_id order by i) as double)
             / nullif(cast(i as double), 0) as p
    from ranked
    where label = 1
    union all
    select l.run_id, l.list_id, cast(p.tp as double) / nullif(cast(p.n as double), 0) as p
    from positive_ranks p
    join lists l on l.list_id = p.list_id
    where l.n_scores = l.n_ret
),
per_list as (
    select list_id, sum_exact(p) as s from precisions group by list_id
)
select l.run_id, l.group_id,
       case when l.n_pos = 0 then null
            else coalesce(p.s, 0.0::double) / nullif(cast(l.n_pos as double), 0) end as value
from lists l
left join per_list p on p.list_id = l.list_id
