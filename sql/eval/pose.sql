-- The stored rows of one run that the pose metrics' NumPy twins read
-- (evalstore.metrics.pose_references.read_pose_run: the twin tests and `eval --ci`), and
-- which runs hold pairs with cameras.

-- name: runs_with_cameras
-- Which of $runs hold image pairs with cameras (the pose metrics' source).
select distinct run_id from pair_cameras where list_contains($runs, run_id);

-- name: pose_cameras
-- The image pairs with cameras of the run $run_id INTEGER, by pair_id: K0, K1 (row-major),
-- the true T_0to1 (3 x 4, row-major) and the keypoints of image 0 (NULL: not given).
-- Output: pair_id, k0_11..k0_33, k1_11..k1_33, t_11..t_34, n_keypoints0.
select p.pair_id,
       c.k0_11, c.k0_12, c.k0_13, c.k0_21, c.k0_22, c.k0_23, c.k0_31, c.k0_32, c.k0_33,
       c.k1_11, c.k1_12, c.k1_13, c.k1_21, c.k1_22, c.k1_23, c.k1_31, c.k1_32, c.k1_33,
       c.t_11, c.t_12, c.t_13, c.t_14, c.t_21, c.t_22, c.t_23, c.t_24,
       c.t_31, c.t_32, c.t_33, c.t_34, c.n_keypoints0
from pair_cameras c
join pairs p on p.run_id = c.run_id and p.pair_no = c.pair_no
where c.run_id = $run_id
order by p.pair_id;

-- name: pose_matches
-- The keypoint matches of the run $run_id INTEGER in input order.
-- Output: pair_id, x0, y0, x1, y1.
select p.pair_id, m.x0, m.y0, m.x1, m.y1
from matches m
join pairs p on p.run_id = m.run_id and p.pair_no = m.pair_no
where m.run_id = $run_id
order by m.seq;

-- name: pose_estimate_rows
-- The pose estimates of the run $run_id INTEGER, every setting.
-- Output: pair_id, method, threshold, confidence, err_t, err_r.
select p.pair_id, s.method, s.threshold, s.confidence, s.err_t, s.err_r
from pose_estimates s
join pairs p on p.run_id = s.run_id and p.pair_no = s.pair_no
where s.run_id = $run_id
order by p.pair_id, s.method, s.threshold, s.confidence;
