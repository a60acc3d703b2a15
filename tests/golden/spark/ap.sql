-- GENERATED from sql/metrics/ap.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- ap: non-interpolated average precision of each ranked list, under `grouped` ties:
--   AP = sum over points t of (TP_t - TP_{t-1}) / P * P_t   (scikit-learn's
--   average_precision_score; VLFeat vl_pr info.ap), P = 0 -> NULL,
-- that is (1/P) * sum over the retrieved positives of P_t = TP / (TP + FP) at the point where
-- the positive enters: the end of its tie group. Ingest stored that point of each retrieved
-- positive (positive_ranks, sql/lib/list_index.sql: tp = TP, n = TP + FP), so AP is an
-- aggregate, with no sort. The other tie policies rank one item at a time: ap_ranked.sql (the
-- registry, evalstore/metrics/registry.py, chooses the file by tie policy).
-- Parameters: $runs integer[], $task varchar.
-- Output: run_id, group_id, value (one row per list).
WITH items AS (
  SELECT
    s.run_id,
    s.list_id,
    s.item_id,
    s.score,
    s.label,
    s.seq
  FROM scores AS s
  WHERE
    ARRAY_CONTAINS(:runs, s.run_id) AND s.task = :task
), lists AS (
  SELECT
    g.run_id,
    g.list_id,
    g.group_id,
    COALESCE(g.n_positives, c.n_pos_labels) AS n_pos,
    c.n_neg,
    c.n_ret,
    c.p_ret,
    c.n_scores
  FROM groups AS g
  JOIN list_stats AS c
    ON c.list_id = g.list_id
  WHERE
    ARRAY_CONTAINS(:runs, g.run_id) AND g.task = :task
), per_list AS (
  SELECT
    p.list_id,
    CAST(SUM(
      CAST((
        CAST(p.tp AS DOUBLE) / NULLIF(CAST(p.n AS DOUBLE), 0)
      ) * POWER(2, 90) AS DECIMAL(38, 0))
    ) AS DOUBLE) * POWER(2, -90) AS s
  FROM positive_ranks AS p
  JOIN lists AS l
    ON l.list_id = p.list_id
  GROUP BY
    p.list_id
)
SELECT
  l.run_id,
  l.group_id,
  CASE
    WHEN l.n_pos = 0
    THEN NULL
    ELSE COALESCE(p.s, CAST(0.0 AS DOUBLE)) / NULLIF(CAST(l.n_pos AS DOUBLE), 0)
  END AS value
FROM lists AS l
LEFT JOIN per_list AS p
  ON p.list_id = l.list_id
