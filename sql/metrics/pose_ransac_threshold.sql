-- pose_ransac_threshold: the RANSAC threshold (pixels) the run's pose metrics are read at:
-- the one given, or under glue-factory's sweep the one of the largest mAA (lib/pose_best.sql,
-- glue-factory's best_th). A record of the setting, not a score.
-- Parameters: $runs integer[], $method varchar, $confidence double,
-- $ransac_thresholds double[], $auc varchar.
-- Output: run_id, group_id (NULL), value (pixels).
with
-- @include lib/pose_best.sql sweep=[5.0::double]
select run_id, cast(null as varchar) as group_id, setting as value
from best
