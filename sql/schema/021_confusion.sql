-- Schema 21: v_confusion, the confusion matrix of every classification run (issue 33).
-- A single-label classifier is stored as the classification task's lists: one ranked list
-- per class (group_id), one item per sample (item_id), label +1 in the list of the sample's
-- true class and -1 (or 0) in the others, the score the classifier's score of that class.
--   actual: the class of the sample's one positive row; a sample with no positive or with
--     several (a multi-label image) has no single true class and is left out;
--   predicted: the class of the sample's highest score; equal scores go to the class whose
--     list was made first (the lowest list_id: the class first met in the input, as
--     np.argmax over the columns in that order; a Parquet file with integer class ids read
--     by DuckDB directly numbers its classes in id order); a missing score (not retrieved,
--     stored NULL) or a sample absent from a class's list is -inf, so a sample whose
--     highest score is -inf ties in every class of the run and is predicted the run's first;
--     a row labelled 0 (ignored) still has its score;
--   n: the number of samples with that (actual, predicted), one row per cell that holds at
--     least one sample (a cell without samples has no row).
-- Rows come per run in class order: actual, then predicted, by list_id.
-- Output: run_id, run, actual, predicted, n.
create view v_confusion as
with class_rows as (
    select s.run_id, s.item_id, s.group_id, s.list_id,
           coalesce(s.score, cast('-inf' as double)) as score, s.label
    from scores s
    where s.task = 'classification'
),
actual as (
    select run_id, item_id, min(group_id) as actual, min(list_id) as actual_list
    from class_rows
    where label = 1
    group by run_id, item_id
    having count(*) = 1
),
first_class as (
    select g.run_id, arg_min(g.group_id, g.list_id) as group_id, min(g.list_id) as list_id
    from groups g
    where g.task = 'classification' and g.list_id is not null
    group by g.run_id
),
top_rows as (
    select run_id, item_id, group_id, list_id, score
    from class_rows
    qualify row_number() over (
        partition by run_id, item_id order by score desc, list_id
    ) = 1
),
predicted as (
    select t.run_id, t.item_id,
           case when t.score = cast('-inf' as double) then f.group_id else t.group_id end
               as predicted,
           case when t.score = cast('-inf' as double) then f.list_id else t.list_id end
               as predicted_list
    from top_rows t
    join first_class f on f.run_id = t.run_id
)
select a.run_id, r.experiment || '/' || r.name as run, a.actual, p.predicted,
       count(*) as n
from actual a
join predicted p on p.run_id = a.run_id and p.item_id = a.item_id
join runs r on r.run_id = a.run_id
group by a.run_id, r.experiment, r.name, a.actual, a.actual_list, p.predicted,
         p.predicted_list
order by a.run_id, a.actual_list, p.predicted_list;
