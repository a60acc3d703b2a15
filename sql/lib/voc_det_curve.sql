-- The ranked list of each class of detection runs under a VOC matching ({matching}:
-- voc_eval or vocevaldet; evalstore/analysis/det_matching.py made det_matches from
-- evalstore.core.detection_voc.voc_lists): precision tp / (tp + fp) and recall tp / npos at
-- each detection in the reference's order (det_matches.seq), difficult objects' detections
-- (label 0) left out; npos = the class's objects not difficult (unmatched ones are not
-- retrieved).
-- Parameters: $runs integer[].
-- CTEs it defines: lists(run_id, list_id, group_id, n_pos), one per (run, class);
--   curve(run_id, list_id, group_id, rn, n_pos, prec, rec), one row per detection.
lists as (
    select run_id, category_id as group_id, n_positives as n_pos,
           cast(run_id as bigint) * 4294967296 + row_number() over (
               partition by run_id order by category_id
           ) as list_id
    from det_positives
    where list_contains($runs, run_id) and matching = '{matching}' and area = 'all'
),
counted as (
    select l.run_id, l.list_id, l.group_id, l.n_pos,
           row_number() over w as rn,
           sum(case when m.label = 1 then 1 else 0 end) over w as tp,
           sum(case when m.label = -1 then 1 else 0 end) over w as fp
    from det_matches m
    join lists l on l.run_id = m.run_id and l.group_id = m.category_id
    where m.matching = '{matching}' and m.label <> 0
    window w as (partition by l.list_id order by m.seq rows between unbounded preceding and current row)
),
curve as (
    select run_id, list_id, group_id, rn, n_pos,
           cast(tp as double) / nullif(cast(tp + fp as double), 0) as prec,
           cast(tp as double) / nullif(cast(n_pos as double), 0) as rec
    from counted
)
