-- Ingest of keypoint matches, image pairs and outcomes. The caller registers validated
-- frames as `_pairs`, `_matches` or `_outcomes` with exactly the columns inserted here
-- (`_matches.pair_id` may be dictionary-encoded: one string per pair, not per match).

-- name: insert_pairs
insert into pairs (run_id, pair_id, h11, h12, h13, h21, h22, h23, h31, h32, h33,
                   e11, e12, e13, e21, e22, e23, e31, e32, e33,
                   r11, r12, r13, r21, r22, r23, r31, r32, r33,
                   width, height, n_inliers, n_invalid, slices, e_direction,
                   estimated, ransac_threshold)
select $run_id, pair_id, h11, h12, h13, h21, h22, h23, h31, h32, h33,
       e11, e12, e13, e21, e22, e23, e31, e32, e33,
       r11, r12, r13, r21, r22, r23, r31, r32, r33,
       width, height, n_inliers, n_invalid, map(slice_keys, slice_values),
       case when e11 is not null then 'direct' end,
       estimated, ransac_threshold
from _pairs;

-- name: insert_matches
insert into matches (run_id, pair_id, x0, y0, x1, y1, score, gt_x1, gt_y1, seq)
select $run_id, pair_id, x0, y0, x1, y1, score, gt_x1, gt_y1, seq
from _matches;

-- name: insert_outcomes
insert into outcomes (run_id, group_id, tp, fp, fn)
select $run_id, group_id, tp, fp, fn
from _outcomes;

-- name: run_has_pairs
select count(*) from pairs where run_id = $run_id;

-- name: run_has_outcomes
select count(*) from outcomes where run_id = $run_id;
