-- ap_voc10_devkit_det: PASCAL VOC detection AP of each class, as the VOC2010+ devkit's
-- VOCevaldet.m (ovmax >= 0.5) and VOCap.m: the area under the precision envelope.
-- Parameters: $runs integer[]. Output: run_id, group_id (the class), value.
with
-- @include lib/voc_det_curve.sql matching=vocevaldet
,
-- @include lib/envelope.sql
,
-- @include lib/voc_det_area.sql
