-- f1_micro: F1 = 2 TP / (2 TP + FP + FN) of the top-1 classes pooled over classes
-- (scikit-learn's f1_score(y_true, y_pred, average="micro") with y_pred the top-1 class):
-- TP = samples whose top-1 is right, FP = FN = the others, so it equals top-1 accuracy.
-- Single-label runs (lib/single_label.sql: the layout, the ties; under grouped the expected
-- value). One row per run (group_id NULL): not a mean over classes.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id (NULL), value.
with
-- @include lib/single_label.sql k=1
,
counts as (
    select run_id, sum_exact(hit) as tp, sum_exact(1.0::double - hit) as fp,
           sum_exact(1.0::double - hit) as fn
    from hits
    group by run_id
)
select run_id, cast(null as varchar) as group_id,
       2.0::double * tp / nullif(2.0::double * tp + fp + fn, 0) as value
from counts
