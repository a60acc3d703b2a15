-- Interpolated AP over the recall grid t_k, k = 0..{last}: AP = 1/{n} * sum_k env(first point
-- with R >= t_k), 0 where R never reaches t_k. {grid} = numpy: t_k = k * {step} in float64, as
-- NumPy makes it (np.arange(0, 1.1, 0.1) and np.linspace(0, 1, 101) are exactly k * 0.1 and
-- k * 0.01); {grid} = matlab: MATLAB's colon 0:{step}:1, whose upper half is 1 - ({last} - k) *
-- {step} (exactly 0.6 and 0.7 where NumPy has 0.6000000000000001 and 0.7000000000000001).
-- Point i is the first with R >= t_k exactly for the grid values in (R_{i-1}, R_i], so it
-- contributes env_i times their number.
-- The sum is exact (docs/metrics.md, "Determinism"): env_i, a double in [0, 1], is scaled by 2^90
-- and rounded to an integer (exact for env_i >= 2^-38; env_i > 0 is at least 1 / rows > 2^-31),
-- times the integer count, and the products are added as decimal(38, 0): the same bits in any
-- order of the terms. The sum is at most {n} * 2^90 < 10^38.
-- Needs `enveloped` (lib/envelope.sql) and `lists`. Defines per_list(run_id, list_id, group_id, value).
grid_counts as (
    -- served = how many grid values are <= rec: floor() gives it to within one step, the two
    -- exact comparisons correct it
    select run_id, list_id, rn, env, rec,
           least({last}, greatest(0, cast(floor(rec / {step}::double) as bigint))) as k0
    from enveloped
),
served as (
    select run_id, list_id, rn, env,
           1 + case when k0 < {last}
                         and case when '{grid}' = 'matlab' and 2 * (k0 + 1) > {last}
                                  then 1.0::double - ({last} - (k0 + 1)) * {step}::double
                                  else (k0 + 1) * {step}::double end <= rec then k0 + 1
                    when k0 > 0
                         and case when '{grid}' = 'matlab' and 2 * k0 > {last}
                                  then 1.0::double - ({last} - k0) * {step}::double
                                  else k0 * {step}::double end > rec then k0 - 1
                    else k0 end as n_le
    from grid_counts
),
contributions as (
    select run_id, list_id,
           cast(env * pow(2, 90) as decimal(38, 0))
             * (n_le - lag(n_le, 1, 0) over (partition by list_id order by rn)) as q
    from served
),
per_list as (
    select l.run_id, l.list_id, l.group_id,
           case when l.n_pos = 0 then null
                else coalesce(cast(sum(c.q) as double) * pow(2, -90), 0.0::double)
                     / {n}::double end as value
    from lists l
    left join contributions c
      on c.run_id = l.run_id and c.list_id = l.list_id
    group by l.run_id, l.list_id, l.group_id, l.n_pos
)
