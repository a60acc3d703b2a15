-- balanced_accuracy: the mean over classes of their recall, the share of a class's samples
-- whose top-1 class is the true one (scikit-learn's balanced_accuracy_score of the top-1
-- classes: a class without samples has no recall and is left out of the mean). Single-label
-- runs (lib/single_label.sql: the layout, the ties); one row per class, the run's value is
-- their mean.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id (the class), value.
with
-- @include lib/single_label.sql k=1
,
per_class as (
    select list_id, count(*) as n, sum_exact(hit) as hits from hits group by list_id
)
select l.run_id, l.group_id, c.hits / nullif(cast(c.n as double), 0) as value
from class_lists l
left join per_class c on c.list_id = l.list_id
