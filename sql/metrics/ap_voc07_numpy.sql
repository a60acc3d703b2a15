-- ap_voc07_numpy: PASCAL VOC 2007 11-point interpolated AP as py-faster-rcnn computes it
-- (voc_ap(rec, prec, use_07_metric=True): `for t in np.arange(0., 1.1, 0.1)`): AP = 1/11 *
-- sum over t of max{P_i : R_i >= t}, 0 when no point reaches t. The grid is k * 0.1 in
-- float64: 0.30000000000000004, 0.6000000000000001 and 0.7000000000000001 where MATLAB's
-- 0:0.1:1 (ap_voc07, the devkit) has 0.30000000000000004, 0.6 and 0.7, so a recall of
-- exactly 0.6 or 0.7 does not reach its grid value here. P = 0 -> NULL.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id, value (one row per list).
with
-- @include lib/ranking_points.sql
,
-- @include lib/envelope.sql
,
-- @include lib/interpolated_ap.sql step=0.1 last=10 n=11 grid=numpy
select run_id, group_id, value from per_list
