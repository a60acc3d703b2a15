-- The matches of detection runs, made on first use (evalstore/analysis/det_matching.py).

-- name: pending_det_runs
-- $runs INTEGER[], $matching VARCHAR. Out: run_id, experiment, name of each detection run
-- whose matches under $matching are not made yet, by run_id.
select r.run_id, r.experiment, r.name
from runs r
where list_contains($runs, r.run_id)
  and exists (select 1 from det_images i where i.run_id = r.run_id)
  and not exists (
    select 1 from det_matched m where m.run_id = r.run_id and m.matching = $matching
  )
order by r.run_id;

-- name: det_run_images
-- $run_id. Out: image_id of each of the run's images.
select image_id from det_images where run_id = $run_id;

-- name: det_run_categories
-- $run_id. Out: category_id of each of the run's categories.
select category_id from det_categories where run_id = $run_id;

-- name: det_run_boxes
-- $run_id. Out: the detections in input order.
select det_id, image_id, category_id, x, y, w, h, score, area, x1, y1, x2, y2
from det_boxes where run_id = $run_id
order by det_id;

-- name: det_run_truth
-- $run_id. Out: the ground-truth boxes in input order.
select gt_id, image_id, category_id, x, y, w, h, area, iscrowd, difficult, x1, y1, x2, y2
from det_truth where run_id = $run_id
order by seq;

-- name: store_det_matches
-- $run_id, $matching; the caller registers _det_matches (det_matches' columns but run_id and
-- matching).
insert into det_matches by name
select $run_id as run_id, $matching as matching, * from _det_matches;

-- name: store_det_positives
-- $run_id, $matching; the caller registers _det_positives.
insert into det_positives by name
select $run_id as run_id, $matching as matching, * from _det_positives;

-- name: mark_det_matched
-- $run_id, $matching: the run's matches under $matching are made.
insert into det_matched values ($run_id, $matching);

-- name: store_det_thresholds
-- $run_id, $matching, $thresholds DOUBLE[]: the IoU thresholds of iou_index 0, 1, ...
insert into det_thresholds
select $run_id, $matching, cast(i - 1 as smallint), $thresholds[i]
from (select unnest(range(1, len($thresholds) + 1)) as i);

-- name: store_det_tide
-- $run_id; the caller registers _det_tide (det_tide's columns but run_id).
insert into det_tide by name
select $run_id as run_id, * from _det_tide;

-- name: det_run_pairs
-- Every (detection, ground-truth box) of one image and category of run $run_id that overlap,
-- with pycocotools' bbIou (cocoapi common/maskApi.c, the operations of
-- evalstore.core.detection.paired_iou in its order, so the same doubles): the intersection
-- over the union, over the detection's own area for a crowd region. Out: det_id, gt_seq,
-- iou, by det_id then gt_seq.
with boxes as (
    select d.det_id, g.seq as gt_seq, g.iscrowd,
           d.w * d.h as da, g.w * g.h as ga,
           least(d.w + d.x, g.w + g.x) - greatest(d.x, g.x) as iw,
           least(d.h + d.y, g.h + g.y) - greatest(d.y, g.y) as ih
    from det_boxes d
    join det_truth g
      on g.run_id = d.run_id and g.image_id = d.image_id and g.category_id = d.category_id
    where d.run_id = $run_id and g.run_id = $run_id
)
select det_id, gt_seq,
       (iw * ih) / (case when iscrowd then da else da + ga - iw * ih end) as iou
from boxes
where iw > 0 and ih > 0
order by det_id, gt_seq;
