-- precision_at_sigma: EventPoint's matching precision. Per image pair, the fraction of its
-- matches within sigma pixels of the ground truth, strictly: [d < sigma] (the formula of
-- EventPoint); a pair without matches scores 0; the mean over pairs is
-- (1/N) sum_i sum_j [d_ij < sigma] / M_i.
-- Parameters: $runs integer[], $sigmas double[] (default 3, 6, 9 px).
-- Output: run_id, group_id (pair), sigma, value.
with
-- @include lib/match_fraction.sql sweep=sigma cmp=< lo_cmp=>=
select run_id, group_id, sigma, value from per_pair
