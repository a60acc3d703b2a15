-- GENERATED from sql/metrics/ap.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python -m evalstore.spark --write-golden
-- ap: non-interpolated average precision of each ranked list.
--   AP = sum over points t of (TP_t - TP_{t-1}) / P * P_t   (VLFeat vl_pr info.ap; with
--   `grouped` ties equal to scikit-learn's average_precision_score). P = 0 -> NULL.
-- Computed per retrieved positive: each adds P_t / P, where P_t = TP / (TP + FP) counted over
-- every item ranked at or above it; under `grouped` ties the whole tie counts (the frame's
-- peers), under the other policies the tie-break keys make every rank distinct. The
-- cumulative counts run over one global order (list after list) minus each list's offset:
-- cheaper than a window partitioned by list.
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
    CASE
      WHEN :ties = 'optimistic'
      THEN -label
      WHEN :ties = 'pessimistic'
      THEN label
      ELSE 0
    END AS k1,
    CASE WHEN :ties = 'grouped' THEN 0 ELSE seq END AS k2
  FROM items
  WHERE
    label <> 0 AND NOT score IS NULL
), list_sizes AS (
  SELECT
    run_id,
    group_id,
    COUNT(*) AS n_list,
    SUM(CASE WHEN label = 1 THEN 1 ELSE 0 END) AS tp_list
  FROM ranked
  GROUP BY
    run_id,
    group_id
), offsets AS (
  SELECT
    run_id,
    group_id,
    COALESCE(SUM(n_list) OVER o, 0) AS n_before,
    COALESCE(SUM(tp_list) OVER o, 0) AS tp_before
  FROM list_sizes
  WINDOW o AS (
    ORDER BY run_id NULLS LAST, group_id NULLS LAST
    rows BETWEEN UNBOUNDED preceding AND 1 preceding
  )
), cumulative AS (
  SELECT
    run_id,
    group_id,
    label,
    SUM(CASE WHEN label = 1 THEN 1 ELSE 0 END) OVER w AS tp_all,
    COUNT(*) OVER w AS n_all
  FROM ranked
  WINDOW w AS (
    ORDER BY run_id NULLS LAST, group_id NULLS LAST, score DESC, k1 NULLS LAST, k2 NULLS LAST
    range BETWEEN UNBOUNDED preceding AND CURRENT ROW
  )
), per_list AS (
  SELECT
    c.run_id,
    c.group_id,
    SUM(
      CAST(c.tp_all - o.tp_before AS DOUBLE) / NULLIF(CAST(c.n_all - o.n_before AS DOUBLE), 0)
    ) AS s
  FROM cumulative AS c
  JOIN offsets AS o
    ON o.run_id = c.run_id AND o.group_id IS NOT DISTINCT FROM c.group_id
  WHERE
    c.label = 1
  GROUP BY
    c.run_id,
    c.group_id
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
