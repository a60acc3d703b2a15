-- ap_voc07_devkit_det: PASCAL VOC detection AP of each class, as the VOC2007 devkit's VOCevaldet.m
-- (ovmax >= 0.5): 11-point AP over MATLAB's 0:0.1:1.
-- Parameters: $runs integer[]. Output: run_id, group_id (the class), value.
with
-- @include lib/voc_det_curve.sql matching=vocevaldet
,
-- @include lib/envelope.sql
,
-- @include lib/interpolated_ap.sql step=0.1 last=10 n=11 grid=matlab
select run_id, group_id, value from per_list
