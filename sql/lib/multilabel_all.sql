-- The predicted labels of the threshold form: every non-ignored label whose score is >= the
-- threshold (NULL, not scored: never). Needs lib/multilabel_cells.sql.
-- CTE it defines: picked(run_id, list_id, threshold, label, w), w = 1 for each prediction.
picked as (
    select c.run_id, c.list_id, s.threshold, c.label, 1.0::double as w
    from cells c
    cross join sweep s
    where c.score >= s.threshold
)
