-- The recall grid as MATLAB's colon 0:{step}:1 makes it (the VOC2007 devkit), k = 0..{last}:
-- its lower half is k * {step}, its upper half is built down from 1, 1 - ({last} - k) * {step}
-- (exactly 0.6 and 0.7 where NumPy has 0.6000000000000001 and 0.7000000000000001; its fourth
-- value is 0.30000000000000004, as NumPy's).
-- Needs `enveloped` (lib/envelope.sql). Defines grid(run_id, list_id, rn, env, rec, k0, t_at,
-- t_above): k0 = floor(rec / {step}), the number of grid values <= rec to within one, and the
-- grid values t_k0 and t_(k0+1) around rec.
grid as (
    select *,
           case when 2 * k0 > {last} then 1.0::double - ({last} - k0) * {step}::double
                else k0 * {step}::double end as t_at,
           case when 2 * (k0 + 1) > {last} then 1.0::double - ({last} - (k0 + 1)) * {step}::double
                else (k0 + 1) * {step}::double end as t_above
    from (
        select run_id, list_id, rn, env, rec,
               least({last}, greatest(0, cast(floor(rec / {step}::double) as bigint))) as k0
        from enveloped
    ) e
)
