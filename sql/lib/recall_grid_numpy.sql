-- The recall grid as NumPy makes it: t_k = k * {step} in float64, k = 0..{last}
-- (np.arange(0, 1.1, 0.1) and np.linspace(0, 1, 101) are exactly k * 0.1 and k * 0.01:
-- 0.30000000000000004, 0.6000000000000001, 0.7000000000000001 for step 0.1).
-- Needs `enveloped` (lib/envelope.sql). Defines grid(run_id, list_id, rn, env, rec, k0, t_at,
-- t_above): k0 = floor(rec / {step}), the number of grid values <= rec to within one, and the
-- grid values t_k0 and t_(k0+1) around rec.
grid as (
    select *, k0 * {step}::double as t_at, (k0 + 1) * {step}::double as t_above
    from (
        select run_id, list_id, rn, env, rec,
               least({last}, greatest(0, cast(floor(rec / {step}::double) as bigint))) as k0
        from enveloped
    ) e
)
