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
-- $run_id. Out: the ground-truth boxes in input order (seq: the place in it).
select gt_id, seq, image_id, category_id, x, y, w, h, area, iscrowd, difficult, x1, y1, x2, y2
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

-- name: store_voc_matches
-- The matches of run $run_id under $matching (voc_eval or vocevaldet), as
-- evalstore.core.detection_voc.voc_lists(..., ties="stable") makes them, stored in
-- det_matches: each class's detections by descending score, equal scores in input order (seq
-- 1, 2, ...). A detection's overlap ovmax is the largest IoU with its image's objects of its
-- class, +1-pixel boxes x1, y1, x2, y2 (the corners as written where finite, else x, y,
-- x + w, y + h), the IoU's operations in voc_lists' order (so the same doubles); jmax the
-- first object in input order with it. Passing (ovmax > 0.5 under voc_eval, >= 0.5 under
-- vocevaldet) to a difficult object it is 0; to another, +1 if it is the first detection of
-- that object in the class's order, else -1; every other detection -1. Only the pairs that
-- pass are joined: where ovmax passes, the pairs equal to it pass too (a pair without overlap
-- has IoU 0 under voc_eval's clipping, and does not count under VOCevaldet.m). Rows in
-- voc_lists' order: classes sorted, then seq.
insert into det_matches by name
with dets as (
    select det_id, image_id, category_id, score,
           case when isfinite(x1) then x1 else x end as x1,
           case when isfinite(y1) then y1 else y end as y1,
           case when isfinite(x2) then x2 else x + w end as x2,
           case when isfinite(y2) then y2 else y + h end as y2
    from det_boxes
    where run_id = $run_id
),
truth as (
    select seq, image_id, category_id, coalesce(difficult, false) as difficult,
           case when isfinite(x1) then x1 else x end as x1,
           case when isfinite(y1) then y1 else y end as y1,
           case when isfinite(x2) then x2 else x + w end as x2,
           case when isfinite(y2) then y2 else y + h end as y2
    from det_truth
    where run_id = $run_id
),
sides as (
    select d.det_id, g.seq as gt_seq, g.difficult,
           least(g.x2, d.x2) - greatest(g.x1, d.x1) + 1.0 as iw,
           least(g.y2, d.y2) - greatest(g.y1, d.y1) + 1.0 as ih,
           (d.x2 - d.x1 + 1.0) * (d.y2 - d.y1 + 1.0) as da,
           (g.x2 - g.x1 + 1.0) * (g.y2 - g.y1 + 1.0) as ga
    from dets d
    join truth g on g.image_id = d.image_id and g.category_id = d.category_id
),
passing as (
    select det_id, gt_seq, difficult, ov
    from (
        select det_id, gt_seq, difficult, (iw * ih) / (da + ga - iw * ih) as ov
        from sides
        where iw > 0 and ih > 0
    ) o
    where case when $matching = 'voc_eval' then ov > 0.5 else ov >= 0.5 end
),
best as (
    select det_id, gt_seq, difficult
    from (
        select det_id, gt_seq, difficult,
               row_number() over (partition by det_id order by ov desc, gt_seq) as r
        from passing
    ) b
    where r = 1
),
ranked as (
    select det_id, category_id, score,
           row_number() over (partition by category_id order by score desc, det_id) as seq
    from det_boxes
    where run_id = $run_id
),
hits as (
    -- an object's detections are all difficult or none
    select r.det_id,
           case when b.difficult then 0
                when r.seq = min(r.seq) over (partition by b.gt_seq) then 1
                else -1 end as label
    from ranked r
    join best b on b.det_id = r.det_id
)
select $run_id as run_id, $matching as matching, r.category_id,
       cast(0 as smallint) as iou_index, r.det_id, r.seq, cast(0 as integer) as rank, r.score,
       cast(coalesce(h.label, -1) as tinyint) as label
from ranked r
left join hits h on h.det_id = r.det_id
order by r.category_id, r.seq;

-- name: store_voc_positives
-- $run_id, $matching: det_positives of the matching, area 'all': each category's objects
-- not difficult (VOC's npos), 0 for a category without them; in det_categories' order.
insert into det_positives by name
select $run_id as run_id, $matching as matching, c.category_id, 'all' as area,
       coalesce(n.n, 0) as n_positives
from det_categories c
left join (
    select category_id, count(*) as n
    from det_truth
    where run_id = $run_id and not coalesce(difficult, false)
    group by category_id
) n on n.category_id = c.category_id
where c.run_id = $run_id
order by c.rowid;
