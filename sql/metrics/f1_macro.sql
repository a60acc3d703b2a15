-- f1_macro: the mean over classes of F1 = 2 TP / (2 TP + FP + FN) = 2 TP / (n_true + n_pred)
-- of the top-1 classes (scikit-learn's f1_score(y_true, y_pred, average="macro") with y_pred
-- the top-1 class: a class neither true nor predicted for any sample has no F1 and is left
-- out; one predicted but never true, or true but never predicted, scores 0). Single-label
-- runs (lib/single_label.sql, lib/single_label_top1.sql: the layout, the ties; under grouped
-- the F1 of the expected counts, not the expected F1). One row per class; the run's value
-- is their mean.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id (the class), value.
with
-- @include lib/single_label.sql k=1
,
-- @include lib/single_label_top1.sql
select run_id, group_id, 2.0::double * tp / nullif(n_true + n_pred, 0) as value
from classes
