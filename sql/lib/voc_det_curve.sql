-- The ranked list of each class of detection runs under a VOC matching ({matching}:
-- voc_eval or vocevaldet; evalstore/analysis/det_matching.py made det_matches from
-- evalstore.core.detection_voc.voc_lists): precision tp / (tp + fp) and recall tp / npos at
-- each true positive in the reference's order (det_matches.seq), difficult objects'
-- detections (label 0) left out; npos = the class's objects not difficult (unmatched ones are
-- not retrieved).
--
-- Only the true positives' points: the AP of every VOC formula reads no other. Recall rises at
-- them only, so a false positive adds (R_i - R_{i-1}) * env_i = 0 to the area (its precision
-- is never NULL: tp + fp >= 1); its precision is below that of the last true positive before
-- it (same tp, larger tp + fp; IEEE division is monotone) or 0 before the first, so neither
-- the envelope max_{j >= i} P_j at a true positive nor the largest precision at recall >= t
-- changes without it (the t = 0 of the 11-point grid: the first true positive's envelope, the
-- largest of all; 0 where there is none, as coalesce gives). The values are the same doubles
-- as over every detection. A true positive's rank among the counted detections (rn = tp +
-- fp) is its seq (1, 2, ... over the class's detections) less the label-0 rows before it,
-- which are few: only the true positives and those rows are ranked.
-- Parameters: $runs integer[].
-- CTEs it defines: lists(run_id, list_id, group_id, n_pos), one per (run, class);
--   curve(run_id, list_id, group_id, rn, n_pos, prec, rec), one row per true positive.
lists as (
    select run_id, category_id as group_id, n_positives as n_pos,
           cast(run_id as bigint) * 4294967296 + row_number() over (
               partition by run_id order by category_id
           ) as list_id
    from det_positives
    where list_contains($runs, run_id) and matching = '{matching}' and area = 'all'
),
marked as (
    -- the true positives and the detections of difficult objects; p: the place among them
    select l.run_id, l.list_id, l.group_id, l.n_pos, m.seq, m.label,
           row_number() over (partition by l.list_id order by m.seq) as p
    from det_matches m
    join lists l on l.run_id = m.run_id and l.group_id = m.category_id
    where m.matching = '{matching}' and m.label >= 0
),
counted as (
    -- p - tp label-0 rows before the true positive: rn = seq - (p - tp), fp = rn - tp
    select run_id, list_id, group_id, n_pos, tp,
           seq - (p - tp) as rn,
           seq - (p - tp) - tp as fp
    from (
        select run_id, list_id, group_id, n_pos, seq, p,
               row_number() over (partition by list_id order by seq) as tp
        from marked
        where label = 1
    ) t
),
curve as (
    select run_id, list_id, group_id, rn, n_pos,
           cast(tp as double) / nullif(cast(tp + fp as double), 0) as prec,
           cast(tp as double) / nullif(cast(n_pos as double), 0) as rec
    from counted
)
