-- ML-GCN's counts and numbers (megvii-research/ML-GCN util.py @ 311f521031b9,
-- AveragePrecisionMeter.evaluation) of each run and threshold, from `picked` (the predicted
-- labels of lib/multilabel_all.sql or lib/multilabel_topk.sql) and `classes`.
-- CTEs it defines:
--   per_class(run_id, group_id, threshold, n_c, n_p, n_g, n_p1): Nc (predicted positives),
--       Np (predicted), Ng (positives) and the guarded Np1 = Np, or 1 where Np = 0;
--   overall(run_id, threshold, op, o_r, of1, cp, cr, cf1): OP = sum Nc / sum Np1,
--       OR = sum Nc / sum Ng, CP = sum (Nc / Np1) / C, CR = sum (Nc / Ng) / C (NULL when a
--       class has no positive: NumPy's 0 / 0), F1 = 2 P R / (P + R), NULL where undefined.
predicted as (
    select run_id, list_id, threshold, sum_exact(w) as n_p,
           sum_exact(case when label = 1 then w else 0.0::double end) as n_c
    from picked
    group by run_id, list_id, threshold
),
per_class as (
    select c.run_id, c.group_id, s.threshold,
           coalesce(p.n_c, 0.0::double) as n_c,
           coalesce(p.n_p, 0.0::double) as n_p,
           cast(c.n_g as double) as n_g,
           case when coalesce(p.n_p, 0.0::double) = 0 then 1.0::double else p.n_p end as n_p1
    from classes c
    cross join sweep s
    left join predicted p on p.list_id = c.list_id and p.threshold = s.threshold
),
sums as (
    select run_id, threshold, count(*) as n_class, min(n_g) as min_g,
           sum_exact(n_c) as sum_c, sum_exact(n_p1) as sum_p1, sum_exact(n_g) as sum_g,
           sum_exact(n_c / nullif(n_p1, 0)) as sum_prec,
           sum_exact(n_c / nullif(n_g, 0)) as sum_rec
    from per_class
    group by run_id, threshold
),
ratios as (
    select run_id, threshold,
           sum_c / nullif(sum_p1, 0) as op,
           sum_c / nullif(sum_g, 0) as o_r,
           sum_prec / nullif(cast(n_class as double), 0) as cp,
           case when min_g = 0 then null
                else sum_rec / nullif(cast(n_class as double), 0) end as cr
    from sums
),
overall as (
    select run_id, threshold, op, o_r, cp, cr,
           (2.0::double * op * o_r) / nullif(op + o_r, 0) as of1,
           (2.0::double * cp * cr) / nullif(cp + cr, 0) as cf1
    from ratios
)
