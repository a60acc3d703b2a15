-- ap_voc07_det: PASCAL VOC detection AP of each class, as py-faster-rcnn voc_eval (ovmax > 0.5)
-- and voc_ap(use_07_metric=True): 11-point AP over np.arange(0, 1.1, 0.1).
-- Parameters: $runs integer[]. Output: run_id, group_id (the class), value.
with
-- @include lib/voc_det_curve.sql matching=voc_eval
,
-- @include lib/envelope.sql
,
-- @include lib/interpolated_ap.sql step=0.1 last=10 n=11 grid=numpy
select run_id, group_id, value from per_list
