-- Ingest of a detection run: the caller registers the four tables of a DetectionInput
-- (evalstore/ingest/formats/detection.py) as `_det_images`, `_det_categories`, `_det_truth`
-- and `_det_boxes`, with exactly those readers' columns.

-- name: insert_det_images
insert into det_images by name
select $run_id as run_id, * from _det_images;

-- name: insert_det_categories
insert into det_categories by name
select $run_id as run_id, * from _det_categories;

-- name: insert_det_truth
insert into det_truth by name
select $run_id as run_id, * from _det_truth;

-- name: insert_det_boxes
insert into det_boxes by name
select $run_id as run_id, * from _det_boxes;

-- name: run_has_detections
select count(*) from det_images where run_id = $run_id;
