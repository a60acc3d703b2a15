-- topk_accuracy: the share of samples whose true class is among their $k highest-scoring
-- classes (scikit-learn's top_k_accuracy_score where no scores tie; at k = 1, top1_accuracy).
-- Single-label runs (lib/single_label.sql: the layout, the ties); the run's row
-- (group_id NULL) is its value, sum hit / samples, and each class's row the share of its
-- samples with the true class in its top k (its recall; NULL for a class without samples).
-- Parameters: $runs integer[], $task varchar, $ties varchar, $k integer >= 1.
-- Output: run_id, group_id (NULL: the run; else the class), value.
with
-- @include lib/single_label.sql k=$k
,
per_class as (
    select list_id, count(*) as n, sum_exact(hit) as hits from hits group by list_id
)
select run_id, cast(null as varchar) as group_id,
       sum_exact(hit) / nullif(cast(count(*) as double), 0) as value
from hits
group by run_id
union all
select l.run_id, l.group_id, c.hits / nullif(cast(c.n as double), 0) as value
from class_lists l
left join per_class c on c.list_id = l.list_id
