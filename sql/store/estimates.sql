-- The homographies of image pairs estimated lazily (evalstore.estimates): which runs have
-- pairs still to estimate, the matches of those pairs, and the estimates written back. A pair
-- is pending while `estimated` is false and it has no e_direction (an estimate written by
-- other means counts as made).

-- name: pending_runs
-- $runs INTEGER[]: the runs to look at. Out: run_id, experiment, name of each run with a
-- pending pair, by run_id.
select r.run_id, r.experiment, r.name
from runs r
where list_contains($runs, r.run_id)
  and exists (
    select 1 from pairs p
    where p.run_id = r.run_id and not p.estimated and p.e_direction is null
  )
order by r.run_id;

-- name: pending_pairs
-- $run_id INTEGER. Out: pair_id, ransac_threshold, n_matches of each pending pair of the run,
-- by pair_id (the order of pending_matches).
select p.pair_id, p.ransac_threshold,
       (select count(*) from matches m
        where m.run_id = p.run_id and m.pair_no = p.pair_no) as n_matches
from pairs p
where p.run_id = $run_id and not p.estimated and p.e_direction is null
order by p.pair_id;

-- name: pending_matches
-- $run_id INTEGER. Out: x0, y0, x1, y1 of the matches of the run's pending pairs, by pair_id
-- and then in input order (seq): each pair's matches as ingest gave them to RANSAC.
select m.x0, m.y0, m.x1, m.y1
from matches m
join pairs p
  on p.run_id = m.run_id and p.pair_no = m.pair_no
 and not p.estimated and p.e_direction is null
where m.run_id = $run_id
order by p.pair_id, m.seq;

-- name: store_estimates
-- $run_id INTEGER; {table}: `pairs`, or the copy of copy_run_pairs; the caller registers
-- `_estimates` (pair_id, e11..e33, r11..r33, n_inliers) with one row per pending pair. Sets
-- the estimates and marks the pairs estimated.
update {table}
set e11 = s.e11, e12 = s.e12, e13 = s.e13, e21 = s.e21, e22 = s.e22, e23 = s.e23,
    e31 = s.e31, e32 = s.e32, e33 = s.e33,
    r11 = s.r11, r12 = s.r12, r13 = s.r13, r21 = s.r21, r22 = s.r22, r23 = s.r23,
    r31 = s.r31, r32 = s.r32, r33 = s.r33,
    n_inliers = s.n_inliers,
    e_direction = case when s.e11 is not null then 'direct' end,
    estimated = true
from _estimates s
where {table}.run_id = $run_id and {table}.pair_id = s.pair_id;

-- name: copy_run_pairs
-- $run_id INTEGER. A temporary copy of the run's pairs (every column), for estimates that a
-- read-only store cannot keep (an export); it lasts until the transaction ends.
create temp table _pairs_estimated as
select * from pairs where run_id = $run_id;
