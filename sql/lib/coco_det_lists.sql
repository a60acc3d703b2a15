-- The ranked lists of a COCO evaluation of detection runs, from the stored matches
-- (det_matches, det_positives, det_thresholds: evalstore/analysis/det_matching.py): one list per
-- (run, category, IoU threshold) under the area range {area} (label column {label}), the
-- detections of rank < {maxdets} in their image and category, at the IoU threshold {iou}
-- (null: every threshold).
-- Parameters: $runs integer[] (NULL: every run).
-- CTEs it defines:
--   lists(run_id, list_id, group_id, iou_index, n_pos): group_id = the category; n_pos = its
--       non-ignored ground truth in the area range (unmatched ground truth is not retrieved).
--   kept(run_id, list_id, seq, label): the list's detections, ignored ones (label 0) left out.
thresholds as (
    select run_id, iou_index, iou
    from det_thresholds
    where ($runs is null or list_contains($runs, run_id)) and matching = 'coco'
),
lists as (
    select p.run_id, p.category_id as group_id, t.iou_index, p.n_positives as n_pos,
           cast(p.run_id as bigint) * 4294967296 + row_number() over (
               partition by p.run_id order by p.category_id, t.iou_index
           ) as list_id
    from det_positives p
    join thresholds t on t.run_id = p.run_id
    where ($runs is null or list_contains($runs, p.run_id))
      and p.matching = 'coco' and p.area = '{area}'
      and ({iou} is null or t.iou = {iou})
),
kept as (
    select l.run_id, l.list_id, m.seq, m.{label} as label
    from det_matches m
    join lists l
      on l.run_id = m.run_id and l.group_id = m.category_id and l.iou_index = m.iou_index
    where m.matching = 'coco' and m.{label} <> 0 and m.rank < {maxdets}
)
