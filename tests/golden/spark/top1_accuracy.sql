-- GENERATED from sql/metrics/top1_accuracy.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- top1_accuracy: the share of samples whose highest-scoring class is the true one
-- (scikit-learn's accuracy_score of the top-1 classes; top_k_accuracy_score at k = 1 where no
-- scores tie). Single-label runs (lib/single_label.sql: the layout, the ties); the run's row
-- (group_id NULL) is its value, sum hit / samples, and each class's row the share of its
-- samples whose top-1 is right (its recall; NULL for a class without samples).
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id (NULL: the run; else the class), value.
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
), per_class AS (
  SELECT
    list_id,
    COUNT(*) AS n,
    CAST(SUM(CAST(hit * POWER(2, 90) AS DECIMAL(38, 0))) AS DOUBLE) * POWER(2, -90) AS hits
  FROM hits
  GROUP BY
    list_id
)
SELECT
  run_id,
  CAST(NULL AS STRING) AS group_id,
  CAST(SUM(CAST(hit * POWER(2, 90) AS DECIMAL(38, 0))) AS DOUBLE) * POWER(2, -90) / NULLIF(CAST(COUNT(*) AS DOUBLE), 0) AS value
FROM hits
GROUP BY
  run_id
UNION ALL
SELECT
  l.run_id,
  l.group_id,
  c.hits / NULLIF(CAST(c.n AS DOUBLE), 0) AS value
FROM class_lists AS l
LEFT JOIN per_class AS c
  ON c.list_id = l.list_id
