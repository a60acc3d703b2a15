-- ap_voc07: PASCAL VOC 2007 11-point interpolated AP as the VOC2007 devkit computes it
-- (VOCevalcls.m: `for t=0:0.1:1, p=max(prec(rec>=t)) ... ap=ap+p/11`): AP = 1/11 * sum over t
-- in MATLAB's 0:0.1:1 of max{P_i : R_i >= t}, 0 when no point reaches t. MATLAB builds the
-- upper half of the grid down from 1, so it holds exactly 0.6 and 0.7 (a recall of 3/5
-- reaches 0.6); its fourth value is 0.30000000000000004, as in NumPy. ap_voc07_numpy is
-- py-faster-rcnn's grid. P = 0 -> NULL.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id, value (one row per list).
with
-- @include lib/ranking_points.sql
,
-- @include lib/envelope.sql
,
-- @include lib/interpolated_ap.sql step=0.1 last=10 n=11 grid=matlab
select run_id, group_id, value from per_list
