-- ap_voc10_det: PASCAL VOC detection AP of each class, as py-faster-rcnn voc_eval (ovmax > 0.5)
-- and voc_ap(use_07_metric=False): the area under the precision envelope.
-- Parameters: $runs integer[]. Output: run_id, group_id (the class), value.
with
-- @include lib/voc_det_curve.sql matching=voc_eval
,
-- @include lib/envelope.sql
,
-- @include lib/voc_det_area.sql
