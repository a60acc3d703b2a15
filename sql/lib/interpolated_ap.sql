-- Interpolated AP over the recall grid t_k, k = 0..{last}: AP = 1/{n} * sum_k env(first point
-- with R >= t_k), 0 where R never reaches t_k; env = the precision envelope. The grid is
-- lib/recall_grid_{grid}.sql's: numpy (k * {step} in float64) or matlab (MATLAB's 0:{step}:1).
-- Point i is the first with R >= t_k exactly for the grid values in (R_{i-1}, R_i]: it
-- contributes env_i once for each of them. The sum of those env_i, doubles in [0, 1], at most
-- {n} of them, is exact (sum_exact; docs/metrics.md, "Determinism").
-- Needs `enveloped` (lib/envelope.sql) and `lists`. Defines per_list(run_id, list_id, group_id, value).
-- @include lib/recall_grid_{grid}.sql step={step} last={last}
,
served as (
    -- n_le: how many grid values are <= rec, k0 corrected by two exact comparisons; n_before:
    -- the same for the point before
    select run_id, list_id, env, n_le,
           lag(n_le, 1, 0) over (partition by list_id order by rn) as n_before
    from (
        select run_id, list_id, rn, env,
               1 + case when k0 < {last} and t_above <= rec then k0 + 1
                        when k0 > 0 and t_at > rec then k0 - 1
                        else k0 end as n_le
        from grid
    ) g
),
first_reached as (
    -- one row per grid value t_k whose first point reaching it is this one
    select run_id, list_id, env, unnest(range(n_before, n_le)) as k
    from served
    where n_le > n_before
),
per_list as (
    select l.run_id, l.list_id, l.group_id,
           case when l.n_pos = 0 then null
                else coalesce(sum_exact(f.env), 0.0::double) / {n}::double end as value
    from lists l
    left join first_reached f on f.run_id = l.run_id and f.list_id = l.list_id
    group by l.run_id, l.list_id, l.group_id, l.n_pos
)
