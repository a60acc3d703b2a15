-- pose_auc: the area under the cumulative curve of the relative pose errors of a run's image
-- pairs, up to each threshold t (degrees), over t: SuperGlue's pose_auc (match_pairs.py
-- reports it at 5, 10, 20), LoFTR's error_auc or glue-factory's AUC by $auc
-- (lib/error_auc.sql). A pair's error is max(err_t, err_r) of its estimate (pose_estimates,
-- made with $method, $confidence and the RANSAC threshold of lib/pose_best.sql: the one given,
-- or glue-factory's best of its sweep); a failed estimate counts, with an infinite error.
-- The value is the run's, not a mean over pairs: one row of group_id NULL per t.
-- Parameters: $runs integer[], $thresholds double[] (default 5, 10, 20), $method varchar,
-- $confidence double, $ransac_thresholds double[], $auc varchar.
-- Output: run_id, group_id (NULL), threshold, value (0..1, higher is better).
with
-- @include lib/pose_best.sql sweep=$thresholds
select a.run_id, cast(null as varchar) as group_id, a.t as threshold, a.value
from aucs a
join best b on b.run_id = a.run_id and b.setting = a.setting
where list_contains($thresholds, a.t)
