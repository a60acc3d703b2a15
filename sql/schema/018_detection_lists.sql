-- Schema 18: a detection run's ranked lists, for the metrics of ranked lists (ap, ndcg,
-- precision_at_k...). On first use evalstore/analysis/det_lists.py writes, from COCO's
-- matching, one list per (category, IoU threshold) of the run under the task `detection`:
-- its kept detections (the 100 best of each image, label +1 matched, -1 unmatched, 0 matched
-- to a crowd region) and its objects no detection found (label +1, not retrieved). They are
-- lists like any other (groups, list_rows_text_f64, the list index) and go with their run.
--   task_kind gains 'detection' (DuckDB adds no value to an ENUM in place: the column goes
--     through text while the type is made again; groups holds one row per list);
--   det_matches.gt_seq: the seq of the ground-truth box a detection is matched to under the
--     area range all (NULL: none), which the lists read to tell the objects not found. The
--     COCO matches made before this column are dropped: the next evaluation makes them again.
alter table groups alter task type varchar;
drop type task_kind;
create type task_kind as enum (
    'verification', 'matching', 'retrieval', 'classification', 'detection'
);
alter table groups alter task type task_kind;

alter table det_matches add column gt_seq bigint;
delete from det_matches where matching = 'coco';
delete from det_positives where matching = 'coco';
delete from det_thresholds where matching = 'coco';
delete from det_matched where matching = 'coco';

-- the views over groups, bound again to the new type (their definitions of schemas 7 and 16)
create or replace view score_items as
select g.run_id, g.task, r.list_id, r.score, r.label, r.seq
from (
    select list_id, cast(score as double) as score, label, seq from list_rows_int_f32
    union all
    select list_id, score, label, seq from list_rows_int_f64
    union all
    select list_id, cast(score as double) as score, label, seq from list_rows_text_f32
    union all
    select list_id, score, label, seq from list_rows_text_f64
) r
join groups g on g.list_id = r.list_id;

create or replace view scores as
select g.run_id, g.task, g.group_id, r.item_id, r.score, r.label, cast(r.seq as bigint) as seq,
       r.list_id, r.gain
from (
    select list_id, cast(item as varchar) as item_id, cast(score as double) as score, label, seq,
           gain
    from list_rows_int_f32
    union all
    select list_id, cast(item as varchar) as item_id, score, label, seq, gain
    from list_rows_int_f64
    union all
    select list_id, item as item_id, cast(score as double) as score, label, seq, gain
    from list_rows_text_f32
    union all
    select list_id, item as item_id, score, label, seq, gain from list_rows_text_f64
) r
join groups g on g.list_id = r.list_id;
