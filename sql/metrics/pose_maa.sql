-- pose_maa: the mean of the run's pose AUCs at 5, 10 and 20 degrees (glue-factory's mAA,
-- eval_poses: np.mean of the three, rounded, AUCs under $auc = 'gluefactory'; SuperGlue's or
-- LoFTR's AUCs under theirs), at the RANSAC threshold of lib/pose_best.sql.
-- The value is the run's, not a mean over pairs: one row of group_id NULL.
-- Parameters: $runs integer[], $method varchar, $confidence double,
-- $ransac_thresholds double[], $auc varchar.
-- Output: run_id, group_id (NULL), value (0..1, higher is better).
with
-- @include lib/pose_best.sql sweep=[5.0::double]
select run_id, cast(null as varchar) as group_id, maa as value
from best
