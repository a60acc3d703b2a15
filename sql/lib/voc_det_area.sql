-- The area under the precision envelope of each class (VOCap.m; py-faster-rcnn voc_ap with
-- use_07_metric=False): sum_i (R_i - R_{i-1}) * max_{j >= i} P_j, R_0 = 0, added by sum_exact;
-- NULL for a class without objects to find (voc_eval divides by npos = 0).
-- Needs lib/voc_det_curve.sql and lib/envelope.sql. Output: run_id, group_id, value.
areas as (
    select run_id, list_id,
           (rec - lag(rec, 1, 0.0::double) over (partition by list_id order by rn)) * env as a
    from enveloped
),
per_list as (
    select run_id, list_id, sum_exact(a) as s from areas group by run_id, list_id
)
select l.run_id, l.group_id,
       case when l.n_pos = 0 then null else coalesce(p.s, 0.0::double) end as value
from lists l
left join per_list p on p.run_id = l.run_id and p.list_id = l.list_id
