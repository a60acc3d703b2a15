-- Derived rows of a run, deleted with the run (store/delete_run_* are all run on rm/replace).

-- name: delete_run_metric_values
delete from metric_values where run_id = $run_id;

-- name: delete_run_list_values
delete from list_values where run_id = $run_id;

-- name: delete_run_pairs
delete from pairs where run_id = $run_id;

-- name: delete_run_matches
delete from matches where run_id = $run_id;

-- name: delete_run_pair_cameras
delete from pair_cameras where run_id = $run_id;

-- name: delete_run_pose_estimates
delete from pose_estimates where run_id = $run_id;

-- name: delete_run_outcomes
delete from outcomes where run_id = $run_id;

-- name: delete_run_det_images
delete from det_images where run_id = $run_id;

-- name: delete_run_det_categories
delete from det_categories where run_id = $run_id;

-- name: delete_run_det_truth
delete from det_truth where run_id = $run_id;

-- name: delete_run_det_boxes
delete from det_boxes where run_id = $run_id;

-- name: delete_run_det_matches
delete from det_matches where run_id = $run_id;

-- name: delete_run_det_positives
delete from det_positives where run_id = $run_id;

-- name: delete_run_det_matched
delete from det_matched where run_id = $run_id;

-- name: delete_run_det_tide
delete from det_tide where run_id = $run_id;

-- name: delete_run_det_thresholds
delete from det_thresholds where run_id = $run_id;
