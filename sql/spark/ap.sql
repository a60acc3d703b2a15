-- GENERATED from sql/metrics/ap.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python -m evalstore.spark --write-golden
-- ap: non-interpolated average precision of each ranked list.
--   AP = sum over points t of (TP_t - TP_{t-1}) / P * P_t   (VLFeat vl_pr info.ap; with
--   `grouped` ties equal to scikit-learn's average_precision_score). P = 0 -> NULL.
-- Each retrieved positive adds P_t / P, P_t = TP / (TP + FP) over the items ranked at or
-- above it. Three ways to the same points, chosen by the data:
--   (a) `grouped` ties, many tied scores: merge each tie into one point, then one window;
--   (b) `grouped` ties, few tied scores: one row per item, a RANGE frame counts its peers;
--   (c) `optimistic`, `pessimistic`, `input`: one point per rank, in the policy's order.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id, value (one row per list).
WITH items AS (
  SELECT
    s.run_id,
    s.group_id,
    s.score,
    s.label,
    s.seq
  FROM scores AS s
  WHERE
    ARRAY_CONTAINS(:runs, s.run_id) AND s.task = :task
), label_counts AS (
  SELECT
    run_id,
    group_id,
    SUM(CASE WHEN label = 1 THEN 1 ELSE 0 END) AS n_pos_labels
  FROM items
  GROUP BY
    run_id,
    group_id
), lists AS (
  SELECT
    c.run_id,
    c.group_id,
    COALESCE(g.n_positives, c.n_pos_labels) AS n_pos
  FROM label_counts AS c
  LEFT JOIN groups AS g
    ON g.run_id = c.run_id
    AND g.task = :task
    AND g.group_id IS NOT DISTINCT FROM c.group_id
), ranked AS (
  SELECT
    run_id,
    group_id,
    score,
    label,
    seq
  FROM items
  WHERE
    label <> 0 AND NOT score IS NULL
), shape AS (
  SELECT
    :ties = 'grouped'
    AND COUNT(*) >= 2 * APPROX_COUNT_DISTINCT(HASH(run_id, group_id, score)) AS merge_ties
  FROM ranked
), terms AS (
  SELECT
    run_id,
    group_id,
    CAST(d_tp AS DOUBLE) * (
      CAST(SUM(d_tp) OVER w AS DOUBLE) / NULLIF(CAST(SUM(d_n) OVER w AS DOUBLE), 0)
    ) AS term,
    d_tp
  FROM (
    SELECT
      run_id,
      group_id,
      score,
      SUM(CASE WHEN label = 1 THEN 1 ELSE 0 END) AS d_tp,
      COUNT(*) AS d_n
    FROM ranked
    WHERE
      (
        SELECT
          merge_ties
        FROM shape
      )
    GROUP BY
      run_id,
      group_id,
      score
  )
  WINDOW w AS (
    PARTITION BY run_id, group_id
    ORDER BY score DESC
    rows BETWEEN UNBOUNDED preceding AND CURRENT ROW
  )
  UNION ALL
  SELECT
    run_id,
    group_id,
    CAST(SUM(CASE WHEN label = 1 THEN 1 ELSE 0 END) OVER w AS DOUBLE) / NULLIF(CAST(COUNT(*) OVER w AS DOUBLE), 0) AS term,
    CASE WHEN label = 1 THEN 1 ELSE 0 END AS d_tp
  FROM ranked
  WHERE
    :ties = 'grouped' AND NOT (
      SELECT
        merge_ties
      FROM shape
    )
  WINDOW w AS (
    PARTITION BY run_id, group_id
    ORDER BY score DESC
    range BETWEEN UNBOUNDED preceding AND CURRENT ROW
  )
  UNION ALL
  SELECT
    run_id,
    group_id,
    CAST(SUM(CASE WHEN label = 1 THEN 1 ELSE 0 END) OVER w AS DOUBLE) / NULLIF(CAST(ROW_NUMBER() OVER w AS DOUBLE), 0) AS term,
    CASE WHEN label = 1 THEN 1 ELSE 0 END AS d_tp
  FROM ranked
  WHERE
    :ties <> 'grouped'
  WINDOW w AS (
    PARTITION BY run_id, group_id
    ORDER BY score DESC, CASE
      WHEN :ties = 'optimistic'
      THEN -label
      WHEN :ties = 'pessimistic'
      THEN label
      ELSE 0
    END NULLS LAST, seq NULLS LAST
    rows BETWEEN UNBOUNDED preceding AND CURRENT ROW
  )
), per_list AS (
  SELECT
    run_id,
    group_id,
    SUM(term) AS s
  FROM terms
  WHERE
    d_tp > 0
  GROUP BY
    run_id,
    group_id
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
  ON p.run_id = l.run_id AND p.group_id IS NOT DISTINCT FROM l.group_id
