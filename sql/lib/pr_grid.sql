-- The interpolated precision of each list at COCO's recall grid t_k = k * 0.01, k = 0..100:
-- the precision envelope at the first point with R >= t_k (no row where the list never
-- reaches t_k: its precision there is 0).
-- Needs `enveloped` (lib/envelope.sql) with one list per (run_id, group_id).
-- CTEs it defines: grid(k, t), spans, at_grid(run_id, group_id, k, env).
grid as (
    select k, k * 0.01::double as t
    from (select unnest(range(0, 101)) as k)
),
spans as (
    -- point i serves the grid values in (R_{i-1}, R_i]; the first point serves [0, R_1]
    select run_id, group_id, rec, env,
           coalesce(lag(rec) over (partition by run_id, group_id order by rn), -1.0)
               as prev_rec
    from enveloped
),
at_grid as (
    select s.run_id, s.group_id, g.k, s.env
    from spans s
    join grid g on g.t > s.prev_rec and g.t <= s.rec
)
