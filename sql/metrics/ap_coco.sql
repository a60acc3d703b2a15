-- ap_coco: COCO 101-point interpolated AP (pycocotools COCOeval.accumulate):
-- AP = 1/101 * sum over t in np.linspace(0, 1, 101) of env(first point with R >= t), 0 when
-- no point reaches t; env = the precision envelope. P = 0 -> NULL.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id, value (one row per list).
with
-- @include lib/ranking_points.sql
,
-- @include lib/envelope.sql
,
-- @include lib/interpolated_ap.sql step=0.01 last=100 n=101 grid=numpy
select run_id, group_id, value from per_list
