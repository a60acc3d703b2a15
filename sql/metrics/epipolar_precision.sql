-- epipolar_precision: per image pair with cameras, the fraction of its matches whose
-- symmetric epipolar distance to the true pose is below the threshold (lib/epipolar.sql;
-- SuperGlue's match_pairs.py: precision = mean(epi_errs < 5e-4), 0 for a pair without
-- matches; LoFTR's epidist_prec the same, at 1e-4 on MegaDepth). The run's value is the mean
-- over its pairs.
-- Parameters: $runs integer[], $thresholds double[] (default 5e-4).
-- Output: run_id, group_id (pair), threshold, value (0..1, higher is better).
with
-- @include lib/epipolar.sql
select c.run_id, c.pair_id as group_id, n.threshold,
       case when n.n_matches = 0 then 0.0::double
            else cast(n.n_correct as double) / nullif(cast(n.n_matches as double), 0) end as value
from counted n
join cameras c on c.run_id = n.run_id and c.pair_no = n.pair_no
