-- The ranked lists of detection runs (task detection), which the metrics of ranked lists
-- read: made on first use from COCO's matches by evalstore/analysis/det_lists.py (schema 18).

-- name: pending_det_lists
-- $runs INTEGER[]. Out: run_id, experiment, name of each detection run among $runs whose
-- lists are not made yet, by run_id.
select r.run_id, r.experiment, r.name
from runs r
where list_contains($runs, r.run_id)
  and exists (select 1 from det_images i where i.run_id = r.run_id)
  and not exists (select 1 from groups g where g.run_id = r.run_id and g.task = 'detection')
order by r.run_id;

-- name: stage_det_lists
-- $run_id, $first: the lists of the run, numbered from $first in (category, IoU threshold)
-- order: each category with an object to find (det_positives, area range all) or a kept
-- detection, at each IoU threshold of COCO's matching. Out: the temp table _det_lists.
create temp table _det_lists as
select p.category_id, t.iou_index, t.iou,
       cast($first - 1 + row_number() over (order by p.category_id, t.iou_index) as integer)
           as list_id
from det_positives p
join det_thresholds t on t.run_id = p.run_id and t.matching = p.matching
where p.run_id = $run_id and p.matching = 'coco' and p.area = 'all'
  and (p.n_positives > 0 or exists (
      select 1 from det_matches m
      where m.run_id = p.run_id and m.matching = 'coco' and m.category_id = p.category_id
  ));

-- name: count_det_lists
select count(*) from _det_lists;

-- name: insert_det_groups
-- $run_id, $max_dets: a groups row per staged list; group_id "<category>@<IoU threshold>".
insert into groups (run_id, task, group_id, n_positives, slices, list_id)
select $run_id, 'detection', l.category_id || '@' || printf('%.2f', l.iou), null,
       map(['iou', 'area', 'max_dets'], [printf('%.2f', l.iou), 'all', cast($max_dets as varchar)]),
       l.list_id
from _det_lists l;

-- name: insert_det_list_rows
-- $run_id, $n_boxes (the run's detections), $area_lo, $area_hi (the area range all): the
-- items of each staged list. Its kept detections, "det:<det_id>", with their score and label
-- under the area range all, seq their place in the category's ranking (descending score,
-- equal scores as pycocotools' accumulate orders them); then its objects that no detection
-- found at its IoU threshold, "gt:<gt_id>", label +1 and no score (not retrieved), seq after
-- every detection. An object is a box that is not a crowd region and whose area is in the
-- range (pycocotools' gtIgnore); det_matches.gt_seq names the box a detection found.
insert into list_rows_text_f64 (list_id, item, score, label, seq, gain)
select l.list_id, 'det:' || m.det_id, m.score, m.label, cast(m.seq as integer), null
from det_matches m
join _det_lists l on l.category_id = m.category_id and l.iou_index = m.iou_index
where m.run_id = $run_id and m.matching = 'coco'
union all
select l.list_id, 'gt:' || g.gt_id, null, 1, cast($n_boxes + g.seq as integer), null
from det_truth g
join _det_lists l on l.category_id = g.category_id
where g.run_id = $run_id and not g.iscrowd and g.area >= $area_lo and g.area <= $area_hi
  and not exists (
      select 1 from det_matches m
      where m.run_id = $run_id and m.matching = 'coco' and m.iou_index = l.iou_index
        and m.gt_seq = g.seq
  );

-- name: det_run_box_count
select count(*) from det_boxes where run_id = $run_id;

-- name: drop_det_lists
drop table if exists _det_lists;
