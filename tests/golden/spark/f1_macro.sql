-- GENERATED from sql/metrics/f1_macro.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- f1_macro: the mean over classes of F1 = 2 TP / (2 TP + FP + FN) = 2 TP / (n_true + n_pred)
-- of the top-1 classes (scikit-learn's f1_score(y_true, y_pred, average="macro") with y_pred
-- the top-1 class: a class neither true nor predicted for any sample has no F1 and is left
-- out; one predicted but never true, or true but never predicted, scores 0). Single-label
-- runs (lib/single_label.sql, lib/single_label_top1.sql: the layout, the ties; under grouped
-- the F1 of the expected counts, not the expected F1). One row per class; the run's value
-- is their mean.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id (the class), value.
WITH class_lists AS (
  SELECT
    g.run_id,
    g.list_id,
    g.group_id
  FROM groups AS g
  WHERE
    ARRAY_CONTAINS(:runs, g.run_id) AND g.task = :task AND NOT g.list_id IS NULL
), candidates AS (
  SELECT
    s.run_id,
    s.item_id,
    s.list_id,
    s.group_id,
    COALESCE(s.score, CAST('-infinity' AS DOUBLE)) AS score,
    s.label
  FROM scores AS s
  WHERE
    ARRAY_CONTAINS(:runs, s.run_id) AND s.task = :task AND s.label <> 0
), placed AS (
  SELECT
    t.run_id,
    t.item_id,
    t.list_id,
    t.group_id,
    t.score,
    MAX(c.score) AS conf,
    COUNT(CASE WHEN c.score > t.score THEN 1 END) AS above,
    COUNT(CASE WHEN c.score = t.score THEN 1 END) AS tied,
    COUNT(CASE WHEN c.score = t.score AND c.list_id < t.list_id THEN 1 END) AS earlier
  FROM candidates AS t
  JOIN candidates AS c
    ON c.run_id = t.run_id AND c.item_id = t.item_id
  WHERE
    t.label = 1
  GROUP BY
    t.run_id,
    t.item_id,
    t.list_id,
    t.group_id,
    t.score
), hits AS (
  SELECT
    run_id,
    item_id,
    list_id,
    group_id,
    conf,
    CASE
      WHEN :ties = 'grouped'
      THEN LEAST(
        GREATEST((
          1 - above
        ) / NULLIF(CAST(tied AS DOUBLE), 0), CAST(0.0 AS DOUBLE)),
        CAST(1.0 AS DOUBLE)
      )
      WHEN :ties = 'optimistic'
      THEN CASE WHEN above < 1 THEN CAST(1.0 AS DOUBLE) ELSE CAST(0.0 AS DOUBLE) END
      WHEN :ties = 'pessimistic'
      THEN CASE WHEN above + tied <= 1 THEN CAST(1.0 AS DOUBLE) ELSE CAST(0.0 AS DOUBLE) END
      ELSE CASE WHEN above + earlier < 1 THEN CAST(1.0 AS DOUBLE) ELSE CAST(0.0 AS DOUBLE) END
    END AS hit
  FROM placed
), top_rows AS (
  SELECT
    p.run_id,
    p.item_id,
    p.list_id AS true_list,
    p.above,
    c.list_id,
    c.label
  FROM placed AS p
  JOIN candidates AS c
    ON c.run_id = p.run_id AND c.item_id = p.item_id AND c.score = p.conf
), top_stats AS (
  SELECT
    run_id,
    item_id,
    true_list,
    MIN(above) AS above,
    COUNT(*) AS n_top,
    MIN(list_id) AS first_top,
    MIN(CASE WHEN label = -1 THEN list_id END) AS first_other
  FROM top_rows
  GROUP BY
    run_id,
    item_id,
    true_list
), tops AS (
  SELECT
    r.run_id,
    r.item_id,
    r.true_list,
    r.list_id,
    CASE
      WHEN :ties = 'grouped'
      THEN CAST(1.0 AS DOUBLE) / NULLIF(CAST(s.n_top AS DOUBLE), 0)
      ELSE CAST(1.0 AS DOUBLE)
    END AS weight
  FROM top_rows AS r
  JOIN top_stats AS s
    ON s.run_id = r.run_id AND s.item_id = r.item_id
  WHERE
    :ties = 'grouped'
    OR r.list_id = CASE
      WHEN :ties = 'optimistic' AND s.above = 0
      THEN s.true_list
      WHEN :ties = 'pessimistic'
      THEN COALESCE(s.first_other, s.true_list)
      ELSE s.first_top
    END
), true_counts AS (
  SELECT
    list_id,
    COUNT(*) AS n_true
  FROM placed
  GROUP BY
    list_id
), predicted AS (
  SELECT
    list_id,
    CAST(SUM(CAST(weight * POWER(2, 90) AS DECIMAL(38, 0))) AS DOUBLE) * POWER(2, -90) AS n_pred,
    CAST(SUM(
      CAST((
        CASE WHEN list_id = true_list THEN weight ELSE CAST(0.0 AS DOUBLE) END
      ) * POWER(2, 90) AS DECIMAL(38, 0))
    ) AS DOUBLE) * POWER(2, -90) AS tp
  FROM tops
  GROUP BY
    list_id
), classes AS (
  SELECT
    l.run_id,
    l.list_id,
    l.group_id,
    COALESCE(n.n_true, 0) AS n_true,
    COALESCE(p.tp, CAST(0.0 AS DOUBLE)) AS tp,
    COALESCE(p.n_pred, CAST(0.0 AS DOUBLE)) AS n_pred
  FROM class_lists AS l
  LEFT JOIN true_counts AS n
    ON n.list_id = l.list_id
  LEFT JOIN predicted AS p
    ON p.list_id = l.list_id
)
SELECT
  run_id,
  group_id,
  CAST(2.0 AS DOUBLE) * tp / NULLIF(n_true + n_pred, 0) AS value
FROM classes
