-- ap_voc07: PASCAL VOC 2007 11-point interpolated AP (devkit, py-faster-rcnn
-- voc_ap(use_07_metric=True)): AP = 1/11 * sum over t in np.arange(0, 1.1, 0.1) of
-- max{P_i : R_i >= t}, 0 when no point reaches t. The grid is k * 0.1 in float64, so its
-- fourth value is 0.30000000000000004, not 0.3. P = 0 -> NULL.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id, value (one row per list).
with
-- @include lib/ranking_points.sql
,
-- @include lib/envelope.sql
,
-- @include lib/interpolated_ap.sql step=0.1 last=10 n=11
select run_id, group_id, value from per_list
