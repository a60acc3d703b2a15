-- Ingest of keypoint matches, image pairs and outcomes. The caller registers validated
-- frames as `_pairs`, `_matches`, `_cameras` or `_outcomes` with exactly the columns inserted here
-- (`_pairs.pair_no` and `_matches.pair_no` number the run's pairs 0, 1, ...: a run's
-- matches come in one ingest, as open_run refuses a second).

-- name: insert_pairs
insert into pairs (run_id, pair_id, pair_no, h11, h12, h13, h21, h22, h23, h31, h32, h33,
                   e11, e12, e13, e21, e22, e23, e31, e32, e33,
                   r11, r12, r13, r21, r22, r23, r31, r32, r33,
                   width, height, n_inliers, n_invalid, slices, e_direction,
                   estimated, ransac_threshold)
select $run_id, pair_id, pair_no, h11, h12, h13, h21, h22, h23, h31, h32, h33,
       e11, e12, e13, e21, e22, e23, e31, e32, e33,
       r11, r12, r13, r21, r22, r23, r31, r32, r33,
       width, height, n_inliers, n_invalid, map(slice_keys, slice_values),
       case when e11 is not null then 'direct' end,
       estimated, ransac_threshold
from _pairs;

-- name: insert_matches
-- By name: `_matches` has pair_no, x0, y0, x1, y1, seq, and score and gt_x1, gt_y1 only
-- where they are stored; an absent one is NULL (no score; truth from the pair's homography,
-- applied when the metrics read the match: lib/match_truth.sql).
insert into matches by name
select $run_id as run_id, *
from _matches;

-- name: insert_pair_cameras
-- `_cameras` has pair_no and the columns of pair_cameras (K0, K1, T_0to1, n_keypoints0) of
-- each pair given with cameras (evalstore/ingest/cameras.py).
insert into pair_cameras by name
select $run_id as run_id, *
from _cameras;

-- name: insert_outcomes
insert into outcomes (run_id, group_id, tp, fp, fn)
select $run_id, group_id, tp, fp, fn
from _outcomes;

-- name: run_has_pairs
select count(*) from pairs where run_id = $run_id;

-- name: run_has_outcomes
select count(*) from outcomes where run_id = $run_id;
