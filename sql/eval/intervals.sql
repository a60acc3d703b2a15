-- The stored rows of one run that the interval of its value resamples by item
-- (evalstore.analysis.intervals: `eval --ci` of a value that is not a mean over lists).

-- name: ci_ranked_rows
-- The ranked rows of the run $run_id INTEGER in the task $task VARCHAR, in input order (also
-- what the twin test of a user's metric reads: evalstore.analysis.twins).
-- Output: group_id, item_id, score, label, seq, gain.
select group_id, item_id, score, label, seq, gain
from scores
where run_id = $run_id and task = $task
order by seq;

-- name: ci_positives
-- The lists of the run $run_id INTEGER in the task $task VARCHAR whose number of positives
-- was given (groups.n_positives).
-- Output: group_id, n_positives.
select group_id, n_positives
from groups
where run_id = $run_id and task = $task and n_positives is not null
order by group_id;

-- name: ci_outcomes
-- The counted outcomes of the run $run_id INTEGER, one row per group.
-- Output: group_id, tp, fp, fn.
select group_id, tp, fp, fn
from outcomes
where run_id = $run_id
order by group_id;

-- name: ci_matches
-- The keypoint matches of the run $run_id INTEGER with their true positions in image 1.
-- Output: pair_id, x0, y0, x1, y1, gt_x1, gt_y1.
select pair_id, x0, y0, x1, y1, gt_x1, gt_y1
from v_matches
where run_id = $run_id
order by seq;

-- name: ci_pairs
-- The image pairs of the run $run_id INTEGER: true, estimated and inverse homographies
-- (row-major) and image sizes.
-- Output: pair_id, h11..h33, e11..e33, r11..r33, width, height.
select pair_id,
       h11, h12, h13, h21, h22, h23, h31, h32, h33,
       e11, e12, e13, e21, e22, e23, e31, e32, e33,
       r11, r12, r13, r21, r22, r23, r31, r32, r33,
       width, height
from pairs
where run_id = $run_id
order by pair_id;

-- name: ci_named_lists
-- The named lists of the run $run_id INTEGER in the task $task VARCHAR (a metric whose only
-- value is a row of group NULL then gives a value of the whole run, not of one unnamed list).
-- Output: n.
select count(group_id) as n
from groups
where run_id = $run_id and task = $task;

-- name: ci_sample_cells
-- The rows of the single-label run $run_id INTEGER in the task $task VARCHAR as the cells of
-- its sample x class matrix (evalstore.core.single_label.sample_cells), without a text per
-- row: each row's sample (numbered from 0 in order of the samples' first rows), its class
-- (from 0 in order of the classes' first rows: the order
-- evalstore.metrics.single_label_references gives the rows of ci_ranked_rows), score and label.
-- Output: sample, class, score, label.
with r as (
    select group_id, item_id, score, label, seq from scores where run_id = $run_id and task = $task
),
samples as (
    select item_id, cast(row_number() over (order by min(seq)) - 1 as integer) as sample
    from r group by item_id
),
classes as (
    select group_id, cast(row_number() over (order by min(seq)) - 1 as integer) as class
    from r group by group_id
)
select s.sample, c.class, r.score, r.label
from r
join samples s on s.item_id is not distinct from r.item_id
join classes c on c.group_id is not distinct from r.group_id;

-- name: ci_sample_ids
-- The samples (item ids) of the run $run_id INTEGER in the task $task VARCHAR, in the order
-- ci_sample_cells numbers them.
-- Output: item_id.
select item_id from scores where run_id = $run_id and task = $task
group by item_id order by min(seq);

-- name: ci_class_ids
-- The classes (group ids) of the run $run_id INTEGER in the task $task VARCHAR, in the order
-- ci_sample_cells numbers them.
-- Output: group_id.
select group_id from scores where run_id = $run_id and task = $task
group by group_id order by min(seq);
