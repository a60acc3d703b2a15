-- ap_voc07_devkit_det: PASCAL VOC detection AP of each class, as the VOC2007 devkit's VOCevaldet.m
-- (ovmax >= 0.5): 11-point AP over MATLAB's 0:0.1:1.
-- A class whose detections all find difficult objects has no value: every precision is
-- 0/0 = NaN there, and the devkit's max(prec(rec>=0)) of them NaN (a class without
-- detections scores 0: max of nothing is taken as 0).
-- Parameters: $runs integer[]. Output: run_id, group_id (the class), value.
with
-- @include lib/voc_det_curve.sql matching=vocevaldet
,
-- @include lib/envelope.sql
,
-- @include lib/interpolated_ap.sql step=0.1 last=10 n=11 grid=matlab
,
marks as (
    select run_id, category_id,
           sum(case when label = 0 then 1 else 0 end) as n_difficult,
           sum(case when label <> 0 then 1 else 0 end) as n_counted
    from det_matches
    where list_contains($runs, run_id) and matching = 'vocevaldet'
    group by run_id, category_id
)
select p.run_id, p.group_id,
       case when m.n_difficult > 0 and m.n_counted = 0 then null else p.value end as value
from per_list p
left join marks m on m.run_id = p.run_id and m.category_id = p.group_id
