-- GENERATED from sql/metrics/fpr95.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- fpr95: false positive rate FP_i / N at the first point (ranking order) with
-- R_i = TP_i / P >= 0.95 (HardNet ErrorRateAt95Recall, UBC PhotoTour). N = the -1 labels of
-- the list, retrieved or not. Recall 0.95 never reached by retrieved items -> 1.0 (a verifier
-- would have to accept everything). P = 0 or N = 0 -> NULL.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
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
), ranked AS (
  SELECT
    run_id,
    list_id,
    score,
    label,
    CASE
      WHEN :ties = 'optimistic'
      THEN -label
      WHEN :ties = 'pessimistic'
      THEN label
      ELSE 0
    END AS k1,
    CASE WHEN :ties = 'docid' THEN item_id END AS k3,
    CASE WHEN :ties = 'grouped' THEN 0 ELSE seq END AS k2
  FROM items
  WHERE
    label <> 0 AND NOT score IS NULL
), steps AS (
  SELECT
    run_id,
    list_id,
    score,
    k1,
    k3,
    k2,
    SUM(CASE WHEN label = 1 THEN 1 ELSE 0 END) AS d_tp,
    SUM(CASE WHEN label = -1 THEN 1 ELSE 0 END) AS d_fp
  FROM ranked
  GROUP BY
    run_id,
    list_id,
    score,
    k1,
    k3,
    k2
), points AS (
  SELECT
    run_id,
    list_id,
    d_tp,
    d_fp,
    SUM(d_tp) OVER w AS tp,
    SUM(d_fp) OVER w AS fp,
    ROW_NUMBER() OVER w AS rn
  FROM steps
  WINDOW w AS (
    PARTITION BY list_id
    ORDER BY score DESC, k1 NULLS LAST, k3 DESC, k2 NULLS LAST
    rows BETWEEN UNBOUNDED preceding AND CURRENT ROW
  )
), curve AS (
  SELECT
    p.run_id,
    p.list_id,
    l.group_id,
    p.rn,
    p.d_tp,
    p.d_fp,
    p.tp,
    p.fp,
    l.n_pos,
    l.n_neg,
    CAST(p.tp AS DOUBLE) / NULLIF(CAST(p.tp + p.fp AS DOUBLE), 0) AS prec,
    CAST(p.tp AS DOUBLE) / NULLIF(CAST(l.n_pos AS DOUBLE), 0) AS rec
  FROM points AS p
  JOIN lists AS l
    ON l.list_id = p.list_id
), at_95 AS (
  SELECT
    run_id,
    list_id,
    MIN(fp) AS fp
  FROM curve
  WHERE
    rec >= CAST(0.95 AS DOUBLE)
  GROUP BY
    run_id,
    list_id
)
SELECT
  l.run_id,
  l.group_id,
  CASE
    WHEN l.n_pos = 0 OR l.n_neg = 0
    THEN NULL
    WHEN a.fp IS NULL
    THEN CAST(1.0 AS DOUBLE)
    ELSE CAST(a.fp AS DOUBLE) / NULLIF(CAST(l.n_neg AS DOUBLE), 0)
  END AS value
FROM lists AS l
LEFT JOIN at_95 AS a
  ON a.run_id = l.run_id AND a.list_id = l.list_id
