-- GENERATED from sql/metrics/cf1.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- cf1: CF1, ML-GCN's 2 CP CR / (CP + CR); not the mean of the classes' F1, of the labels
-- whose score is >= the threshold (ML-GCN's overall: 0 on logits). Reference: megvii-
-- research/ML-GCN util.py @ 311f521031b91c59a8bd65a1afe3e6cf9a97916a,
-- AveragePrecisionMeter.evaluation. Rows: the run's CF1 (group_id NULL) and each class's F1
-- 2 Nc / (Np + Ng) (NULL when both are 0), at each threshold.
-- Parameters: $runs integer[], $task varchar, $thresholds double[].
-- Output: run_id, group_id, threshold, value.
WITH rows_in AS (
  SELECT
    run_id,
    list_id,
    group_id,
    item_id,
    score,
    label,
    MIN(seq) OVER (PARTITION BY list_id) AS first_seq
  FROM scores
  WHERE
    ARRAY_CONTAINS(:runs, run_id) AND task = :task
), cells AS (
  SELECT
    run_id,
    list_id,
    group_id,
    item_id,
    score,
    label,
    first_seq
  FROM rows_in
  WHERE
    label <> 0
), classes AS (
  SELECT
    run_id,
    list_id,
    group_id,
    SUM(CASE WHEN label = 1 THEN 1 ELSE 0 END) AS n_g
  FROM rows_in
  GROUP BY
    run_id,
    list_id,
    group_id
), sweep AS (
  SELECT
    EXPLODE(:thresholds) AS threshold
), picked AS (
  SELECT
    c.run_id,
    c.list_id,
    s.threshold,
    c.label,
    CAST(1.0 AS DOUBLE) AS w
  FROM cells AS c
  CROSS JOIN sweep AS s
  WHERE
    c.score >= s.threshold
), predicted AS (
  SELECT
    run_id,
    list_id,
    threshold,
    CAST(SUM(CAST(w * POWER(2, 90) AS DECIMAL(38, 0))) AS DOUBLE) * POWER(2, -90) AS n_p,
    CAST(SUM(
      CAST((
        CASE WHEN label = 1 THEN w ELSE CAST(0.0 AS DOUBLE) END
      ) * POWER(2, 90) AS DECIMAL(38, 0))
    ) AS DOUBLE) * POWER(2, -90) AS n_c
  FROM picked
  GROUP BY
    run_id,
    list_id,
    threshold
), per_class AS (
  SELECT
    c.run_id,
    c.group_id,
    s.threshold,
    COALESCE(p.n_c, CAST(0.0 AS DOUBLE)) AS n_c,
    COALESCE(p.n_p, CAST(0.0 AS DOUBLE)) AS n_p,
    CAST(c.n_g AS DOUBLE) AS n_g,
    CASE
      WHEN COALESCE(p.n_p, CAST(0.0 AS DOUBLE)) = 0
      THEN CAST(1.0 AS DOUBLE)
      ELSE p.n_p
    END AS n_p1
  FROM classes AS c
  CROSS JOIN sweep AS s
  LEFT JOIN predicted AS p
    ON p.list_id = c.list_id AND p.threshold = s.threshold
), sums AS (
  SELECT
    run_id,
    threshold,
    COUNT(*) AS n_class,
    MIN(n_g) AS min_g,
    CAST(SUM(CAST(n_c * POWER(2, 90) AS DECIMAL(38, 0))) AS DOUBLE) * POWER(2, -90) AS sum_c,
    CAST(SUM(CAST(n_p1 * POWER(2, 90) AS DECIMAL(38, 0))) AS DOUBLE) * POWER(2, -90) AS sum_p1,
    CAST(SUM(CAST(n_g * POWER(2, 90) AS DECIMAL(38, 0))) AS DOUBLE) * POWER(2, -90) AS sum_g,
    CAST(SUM(CAST((
      n_c / NULLIF(n_p1, 0)
    ) * POWER(2, 90) AS DECIMAL(38, 0))) AS DOUBLE) * POWER(2, -90) AS sum_prec,
    CAST(SUM(CAST((
      n_c / NULLIF(n_g, 0)
    ) * POWER(2, 90) AS DECIMAL(38, 0))) AS DOUBLE) * POWER(2, -90) AS sum_rec
  FROM per_class
  GROUP BY
    run_id,
    threshold
), ratios AS (
  SELECT
    run_id,
    threshold,
    sum_c / NULLIF(sum_p1, 0) AS op,
    sum_c / NULLIF(sum_g, 0) AS o_r,
    sum_prec / NULLIF(CAST(n_class AS DOUBLE), 0) AS cp,
    CASE WHEN min_g = 0 THEN NULL ELSE sum_rec / NULLIF(CAST(n_class AS DOUBLE), 0) END AS cr
  FROM sums
), overall AS (
  SELECT
    run_id,
    threshold,
    op,
    o_r,
    cp,
    cr,
    (
      CAST(2.0 AS DOUBLE) * op * o_r
    ) / NULLIF(op + o_r, 0) AS of1,
    (
      CAST(2.0 AS DOUBLE) * cp * cr
    ) / NULLIF(cp + cr, 0) AS cf1
  FROM ratios
)
SELECT
  run_id,
  CAST(NULL AS STRING) AS group_id,
  threshold,
  cf1 AS value
FROM overall
UNION ALL
SELECT
  run_id,
  group_id,
  threshold,
  (
    CAST(2.0 AS DOUBLE) * n_c
  ) / NULLIF(n_p + n_g, 0) AS value
FROM per_class
