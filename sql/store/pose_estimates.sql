-- The relative poses of image pairs with cameras, estimated on first use
-- (evalstore.analysis.pose_estimates): which (pair, setting) has no estimate yet, the cameras
-- and matches of those pairs, and the estimates written. A setting is (method, threshold,
-- confidence), given as three lists of equal length whose k-th entries (1-based) make the
-- k-th setting. Only pairs with a pair_cameras row are estimated.

-- name: pose_pending
-- $runs INTEGER[]; $methods VARCHAR[], $thresholds DOUBLE[], $confidences DOUBLE[]: the
-- settings. Out: run_id, run (EXPERIMENT/NAME), pair_no, k (the setting's 1-based index) of
-- every pair with cameras of the runs and setting without a stored estimate, by run_id,
-- pair_no, k.
with settings as (
    select unnest($methods) as method, unnest($thresholds) as threshold,
           unnest($confidences) as confidence, generate_subscripts($methods, 1) as k
)
select c.run_id, r.experiment || '/' || r.name as run, c.pair_no, s.k
from pair_cameras c
join runs r on r.run_id = c.run_id
cross join settings s
where list_contains($runs, c.run_id)
  and not exists (
    select 1 from pose_estimates e
    where e.run_id = c.run_id and e.pair_no = c.pair_no and e.method = s.method
      and e.threshold = s.threshold and e.confidence = s.confidence
  )
order by c.run_id, c.pair_no, s.k;

-- name: pose_pairs
-- $run_ids INTEGER[], $pair_nos INTEGER[]: the pairs (parallel lists, sorted by run_id and
-- pair_no, no pair twice). Out: run_id, pair_no, k0_11..k0_33, k1_11..k1_33 and t_11..t_34
-- of each, by run_id and pair_no.
with wanted as (
    select unnest($run_ids) as run_id, unnest($pair_nos) as pair_no
)
select c.run_id, c.pair_no,
       c.k0_11, c.k0_12, c.k0_13, c.k0_21, c.k0_22, c.k0_23, c.k0_31, c.k0_32, c.k0_33,
       c.k1_11, c.k1_12, c.k1_13, c.k1_21, c.k1_22, c.k1_23, c.k1_31, c.k1_32, c.k1_33,
       c.t_11, c.t_12, c.t_13, c.t_14, c.t_21, c.t_22, c.t_23, c.t_24,
       c.t_31, c.t_32, c.t_33, c.t_34
from pair_cameras c
join wanted w on w.run_id = c.run_id and w.pair_no = c.pair_no
order by c.run_id, c.pair_no;

-- name: pose_matches
-- $runs INTEGER[]: the runs of the pairs. Out: run_id, pair_no, seq, x0, y0, x1, y1 of
-- every match of the runs, unsorted: a scan with a filter keeps the table's order, which
-- ingest wrote by pair and seq, and the caller checks that order (sorting where it does not
-- hold) rather than have an ORDER BY sort millions of rows again.
select run_id, pair_no, seq, x0, y0, x1, y1
from matches
where list_contains($runs, run_id);

-- name: insert_pose_estimates
-- The caller registers `_pose_estimates` with the columns of pose_estimates, one row per
-- (pair, setting) estimated. Stores them.
insert into pose_estimates (
    run_id, pair_no, method, threshold, confidence,
    r11, r12, r13, r21, r22, r23, r31, r32, r33, t1, t2, t3, err_t, err_r, n_inliers
)
select run_id, pair_no, method, threshold, confidence,
       r11, r12, r13, r21, r22, r23, r31, r32, r33, t1, t2, t3, err_t, err_r, n_inliers
from _pose_estimates;
