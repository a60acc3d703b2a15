-- ap: non-interpolated average precision of each ranked list.
--   AP = sum over points t of (TP_t - TP_{t-1}) / P * P_t   (VLFeat vl_pr info.ap; with
--   `grouped` ties equal to scikit-learn's average_precision_score). P = 0 -> NULL.
-- Each retrieved positive adds P_t / P, P_t = TP / (TP + FP) at the point where it enters:
-- under `grouped` ties the end of its tie group, else its own rank in the policy's order.
-- Two ways, by tie policy:
--   (a) `grouped`: no sort at all. Ingest stored, for each retrieved positive, the point where
--       its tie group ends (positive_ranks, sql/lib/list_index.sql): TP = tp, TP + FP = n.
--       A list without tied scores (list_stats.n_scores = n_ret) is ranked alike by every
--       policy, and takes this way under all of them;
--   (b) `optimistic`, `pessimistic`, `input`, `docid` on the other lists: one point per
--       rank, in the policy's order: a positive at row_number() i among all items and j among the positives has
--       P_t = j / i. Windows are partitioned by list_id, unique across runs, tasks and lists.
-- The sum over points is exact (docs/metrics.md, "Determinism"): each P_t, a double, is scaled
-- by 2^90 and rounded to an integer (exact for P_t >= 2^-38; P_t >= 1 / rows > 2^-31), and the
-- integers are added as decimal(38, 0): the same bits in any order of the terms, on any
-- number of threads. It stays below 2^90 * 2^31 < 10^38.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id, value (one row per list).
with
-- @include lib/lists.sql
,
ranked as (
    -- the rows that (b) sorts: of lists with tied scores (or not counted), other policies
    select i.run_id, i.list_id, i.score, i.label, i.seq, i.item_id
    from items i
    join lists l on l.list_id = i.list_id
    where i.label <> 0 and i.score is not null and $ties <> 'grouped'
      and (l.n_scores is null or l.n_scores < l.n_ret)
),
terms as (
    -- (a) grouped, and any policy on a list without tied scores: the stored points
    select l.run_id, l.list_id,
           cast(cast(p.tp as double) / nullif(cast(p.n as double), 0) * pow(2, 90)
                as decimal(38, 0)) as term
    from positive_ranks p
    join lists l on l.list_id = p.list_id
    where $ties = 'grouped' or l.n_scores = l.n_ret
    union all
    -- (b) optimistic / pessimistic / input / docid: the j-th positive at row i, in the
    -- policy's order
    select run_id, list_id,
           cast(cast(j as double) / nullif(cast(i as double), 0) * pow(2, 90) as decimal(38, 0))
             as term
    from (
        select run_id, list_id, i,
               row_number() over (partition by list_id order by score desc, k1, k3 desc, seq)
                 as j
        from (
            select run_id, list_id, score, label, seq,
                   case when $ties = 'optimistic' then -label
                        when $ties = 'pessimistic' then label else 0 end as k1,
                   case when $ties = 'docid' then item_id end as k3,
                   row_number() over (
                       partition by list_id
                       order by score desc,
                                case when $ties = 'optimistic' then -label
                                     when $ties = 'pessimistic' then label else 0 end,
                                case when $ties = 'docid' then item_id end desc,
                                seq
                   ) as i
            from ranked
            where $ties <> 'grouped'
        )
        where label = 1
    )
),
per_list as (
    select run_id, list_id, sum(term) as s
    from terms
    group by run_id, list_id
)
select l.run_id, l.group_id,
       case when l.n_pos = 0 then null
            else coalesce(cast(p.s as double) * pow(2, -90), 0.0::double)
                 / nullif(cast(l.n_pos as double), 0) end as value
from lists l
left join per_list p on p.list_id = l.list_id
