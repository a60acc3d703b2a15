-- What ingest stores per ranked list once its rows are in (scores never change after ingest),
-- so that metrics read counts and points instead of scanning and sorting rows again.
-- Included after a CTE index_rows(list_id, score, label) that the including query defines
-- (the rows of the lists to index).
-- CTEs it defines:
--   list_counts(list_id, n_rows, n_pos_labels, n_neg, n_ret, p_ret, n_scores): the stored
--       rows, the +1 labels, the -1 labels, the retrieved non-ignored rows, the retrieved
--       positives, and the distinct scores among the retrieved non-ignored rows: NULL here
--       (a count of distinct values costs a pass of its own); the NumPy way counts them
--       from its sort. A list with n_scores = n_ret has no tied scores, so every tie policy
--       ranks it as `grouped` does;
--   positive_points(list_id, tp, n): one row per retrieved positive, the point where it
--       enters the ranking under `grouped` ties (the end of its tie group): tp positives and
--       n non-ignored items score at least as high. With r the ascending rank() of a row
--       among the n_ret retrieved non-ignored rows of its list and q that of a positive among
--       the p_ret retrieved positives, tp = p_ret - q + 1 and n = n_ret - r + 1.
-- evalstore/ingest/index.py computes positive_points of float32 scores with one NumPy sort
-- instead; tests/test_list_index.py checks that both give the same rows.
list_counts as (
    select list_id,
           count(*) as n_rows,
           sum(case when label = 1 then 1 else 0 end) as n_pos_labels,
           sum(case when label = -1 then 1 else 0 end) as n_neg,
           sum(case when label <> 0 and score is not null then 1 else 0 end) as n_ret,
           sum(case when label = 1 and score is not null then 1 else 0 end) as p_ret,
           cast(null as bigint) as n_scores
    from index_rows
    group by list_id
),
positive_points as (
    select p.list_id, cast(c.p_ret - p.q + 1 as integer) as tp,
           cast(c.n_ret - p.r + 1 as integer) as n
    from (
        select list_id, r, rank() over (partition by list_id order by score) as q
        from (
            select list_id, score, label,
                   rank() over (partition by list_id order by score) as r
            from index_rows
            where label <> 0 and score is not null
        )
        where label = 1
    ) p
    join list_counts c on c.list_id = p.list_id
)
