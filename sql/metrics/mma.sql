-- mma: mean matching accuracy (D2-Net, HPatches). Per image pair, the fraction of its
-- matches within t pixels of the ground truth, inclusively: [d <= t] (as D2-Net's code); a
-- pair without matches scores 0; averaged over pairs, for t = 1..10 px: a curve.
-- Parameters: $runs integer[], $thresholds double[] (default 1, 2, ..., 10).
-- Output: run_id, group_id (pair), threshold, value.
with
-- @include lib/match_fraction.sql sweep=threshold cmp=<= lo_cmp=>
select run_id, group_id, threshold, value from per_pair
