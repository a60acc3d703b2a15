-- matching_score: per image pair with cameras, its correct matches (symmetric epipolar
-- distance below the threshold, lib/epipolar.sql) over the keypoints detected in image 0
-- (SuperGlue's match_pairs.py: num_correct / len(kpts0), 0 without keypoints); NULL where
-- n_keypoints0 was not given. The run's value is the mean over its pairs.
-- Parameters: $runs integer[], $thresholds double[] (default 5e-4).
-- Output: run_id, group_id (pair), threshold, value (0..1, higher is better).
with
-- @include lib/epipolar.sql
select c.run_id, c.pair_id as group_id, n.threshold,
       case when c.n_keypoints0 is null then null
            when c.n_keypoints0 = 0 then 0.0::double
            else cast(n.n_correct as double)
                 / nullif(cast(c.n_keypoints0 as double), 0) end as value
from counted n
join cameras c on c.run_id = n.run_id and c.pair_no = n.pair_no
