-- ap: non-interpolated average precision of each ranked list.
--   AP = sum over points t of (TP_t - TP_{t-1}) / P * P_t   (VLFeat vl_pr info.ap; with
--   `grouped` ties equal to scikit-learn's average_precision_score). P = 0 -> NULL.
-- Each retrieved positive adds P_t / P, P_t = TP / (TP + FP) at the point where it enters:
-- under `grouped` ties the end of its tie group, else its own rank in the policy's order.
-- Windows are partitioned by list_id, unique across runs, tasks and lists. Three ways to
-- the same values, chosen by the data:
--   (a) `grouped` ties, many tied scores: merge each tie into one point, then one window;
--   (b) `grouped` ties, few tied scores: ranks instead of running sums. With r the ascending
--       rank() of a row among the retrieved non-ignored items of its list (n of them) and q
--       that of a positive among the retrieved positives (m of them), a positive's tie group
--       ends with TP = m - q + 1 positives and TP + FP = n - r + 1 items;
--   (c) `optimistic`, `pessimistic`, `input`, `docid`: one point per rank, in the policy's order: a
--       positive at row_number() i among all items and j among the positives has P_t = j / i.
-- The sum over points is exact (docs/metrics.md, "Determinism"): each P_t, a double, is scaled
-- by 2^90 and rounded to an integer (exact for P_t >= 2^-38; P_t >= 1 / rows > 2^-31), times its
-- d_tp in (a), and the integers are added as decimal(38, 0): the same bits in any order of the
-- terms, on any number of threads, and the same sum by (a) and (b). It stays below
-- 2^90 * 2^31 < 10^38.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id, value (one row per list).
with
-- @include lib/lists.sql
,
ranked as (
    select run_id, list_id, score, label, seq, item_id
    from items
    where label <> 0 and score is not null
),
shape as (
    -- grouped ties and at least 2 rows per distinct (list, score) on average (HyperLogLog
    -- estimate, one cheap pass): merge each tie group into one row before the window
    select $ties = 'grouped'
           and count(*) >= 2 * approx_count_distinct(hash(run_id, list_id, score)) as merge_ties
    from ranked
),
terms as (
    -- (a) grouped, many ties: one row per distinct score, d_tp * P_t
    select run_id, list_id,
           cast(cast(sum(d_tp) over w as double) / nullif(cast(sum(d_n) over w as double), 0)
                * pow(2, 90) as decimal(38, 0)) * d_tp as term
    from (
        select run_id, list_id, score,
               sum(case when label = 1 then 1 else 0 end) as d_tp, count(*) as d_n
        from ranked
        where (select merge_ties from shape)
        group by run_id, list_id, score
    )
    window w as (partition by list_id order by score desc
                 rows between unbounded preceding and current row)
    union all
    -- (b) grouped, few ties: q-th positive of m, r-th item of n (ascending ranks)
    select p.run_id, p.list_id,
           cast(cast(l.p_ret - p.q + 1 as double) / nullif(cast(l.n_ret - p.r + 1 as double), 0)
                * pow(2, 90) as decimal(38, 0)) as term
    from (
        select run_id, list_id, r, rank() over (partition by list_id order by score) as q
        from (
            select run_id, list_id, score, label,
                   rank() over (partition by list_id order by score) as r
            from ranked
            where $ties = 'grouped' and not (select merge_ties from shape)
        )
        where label = 1
    ) p
    join lists l on l.list_id = p.list_id
    union all
    -- (c) optimistic / pessimistic / input / docid: the j-th positive at row i, in the
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
