-- The first tie group of each list that holds a positive (lib/graded_ranks.sql's tie_groups
-- in ranking order). Defines first_hit(run_id, list_id, a, n, r).
first_hit as (
    select run_id, list_id, a, n, r
    from (
        select run_id, list_id, a, n, r,
               row_number() over (partition by list_id order by a) as o
        from tie_groups
        where r > 0
    ) t
    where o = 1
)
