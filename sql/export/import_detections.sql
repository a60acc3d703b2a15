-- Checks of a detection run's rows as an import brings them in (evalstore/scale/importer.py,
-- import_checks.py): what the detection readers refuse (evalstore/ingest/formats/detection.py
-- check_boxes, check_scores; coco.py's ids; boxes.py, voc_det.py) is refused here too.

-- name: imported_duplicate_ids
-- The ids that one run's det_images or det_categories partition holds twice (`_import_ids`:
-- its id column), before it is inserted (the readers give each image and category once). {id}: the quoted
-- id column (image_id, category_id). Output: n (ids held more than once), id (one example),
-- times (how often it is held); one row.
select count(*) as n, any_value(id) as id, any_value(times) as times
from (select {id} as id, count(*) as times from _import_ids group by {id}
      having count(*) > 1);

-- name: imported_detection_problems
-- What is wrong with the detection rows just imported for the run $run_id INTEGER, as the
-- readers would have refused it: a ground-truth box or a detection of an image or a category
-- the run lacks; an x or y that is NaN or infinite, a w or h that is NaN, infinite or
-- negative; a NaN score; a det_id (the input position, 0 .. n-1, by which equal scores are
-- ordered) outside 0 .. n-1 or twice; corners (x1, y1, x2, y2, kept where the input wrote
-- them) given in part, or other than the box they were read into (x = x1, y = y1,
-- w = x2 - x1, h = y2 - y1). Output: problem, tbl (det_truth or det_boxes), n (rows), example
-- (an image id, a det_id or a value of one example row); one row per kind of problem found.
with
boxes as (
    select 'det_truth' as tbl, gt_id as row_id, image_id, category_id, x, y, w, h,
           cast(null as double) as score, x1, y1, x2, y2
    from det_truth where run_id = $run_id
    union all
    select 'det_boxes', cast(det_id as varchar), image_id, category_id, x, y, w, h, score,
           x1, y1, x2, y2
    from det_boxes where run_id = $run_id
),
n_dets as (select count(*) as n from det_boxes where run_id = $run_id)
select 'image' as problem, tbl, count(*) as n, any_value(image_id) as example
from boxes b
where not exists (select 1 from det_images i where i.run_id = $run_id and i.image_id = b.image_id)
group by tbl
union all
select 'category', tbl, count(*), any_value(category_id)
from boxes b
where not exists (select 1 from det_categories c
                  where c.run_id = $run_id and c.category_id = b.category_id)
group by tbl
union all
select 'position', tbl, count(*), any_value(row_id || ': ' || x || ', ' || y)
from boxes
where not (isfinite(x) and isfinite(y))
group by tbl
union all
select 'side', tbl, count(*), any_value(row_id || ': ' || w || ' x ' || h)
from boxes
where not (isfinite(w) and isfinite(h) and w >= 0 and h >= 0)
group by tbl
union all
select 'score', tbl, count(*), any_value(row_id)
from boxes
where isnan(score)
group by tbl
union all
select 'det_id', 'det_boxes', count(*), any_value(cast(det_id as varchar))
from (select det_id from det_boxes where run_id = $run_id
      qualify det_id < 0 or det_id >= (select n from n_dets)
              or count(*) over (partition by det_id) > 1)
having count(*) > 0
union all
select 'corners', tbl, count(*), any_value(row_id)
from boxes
where (x1 is null or y1 is null or x2 is null or y2 is null)
      <> (x1 is null and y1 is null and x2 is null and y2 is null)
   or (x1 is not null and not (x = x1 and y = y1 and w = x2 - x1 and h = y2 - y1))
group by tbl;
