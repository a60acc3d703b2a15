-- GENERATED from sql/metrics/pose_auc.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- pose_auc: the area under the cumulative curve of the relative pose errors of a run's image
-- pairs, up to each threshold t (degrees), over t: SuperGlue's pose_auc (match_pairs.py
-- reports it at 5, 10, 20), LoFTR's error_auc or glue-factory's AUC by $auc
-- (lib/error_auc.sql). A pair's error is max(err_t, err_r) of its estimate (pose_estimates,
-- made with $method, $confidence and the RANSAC threshold of lib/pose_best.sql: the one given,
-- or glue-factory's best of its sweep); a failed estimate counts, with an infinite error.
-- The value is the run's, not a mean over pairs: one row of group_id NULL per t.
-- Parameters: $runs integer[], $thresholds double[] (default 5, 10, 20), $method varchar,
-- $confidence double, $ransac_thresholds double[], $auc varchar.
-- Output: run_id, group_id (NULL), threshold, value (0..1, higher is better).
WITH errors AS (
  SELECT
    run_id,
    threshold AS setting,
    pair_no,
    GREATEST(err_t, err_r) AS e
  FROM pose_estimates
  WHERE
    ARRAY_CONTAINS(:runs, run_id)
    AND method = :method
    AND confidence = :confidence
    AND ARRAY_CONTAINS(:ransac_thresholds, threshold)
), auc_ths AS (
  SELECT
    EXPLODE(:thresholds) AS t
  UNION
  SELECT
    t
  FROM VALUES
    (CAST(5.0 AS DOUBLE)),
    (CAST(10.0 AS DOUBLE)),
    (CAST(20.0 AS DOUBLE)) AS f(t)
), ranked AS (
  SELECT
    run_id,
    setting,
    e,
    ROW_NUMBER() OVER (PARTITION BY run_id, setting ORDER BY e NULLS LAST) AS i,
    COUNT(*) OVER (PARTITION BY run_id, setting) AS n
  FROM errors
), recalls AS (
  SELECT
    run_id,
    setting,
    e,
    i,
    CASE
      WHEN :auc = 'loftr' AND i = n
      THEN CAST(1.0 AS DOUBLE)
      WHEN :auc = 'loftr'
      THEN CAST(i AS DOUBLE) * (
        CAST(1.0 AS DOUBLE) / NULLIF(CAST(n AS DOUBLE), 0)
      )
      ELSE CAST(i AS DOUBLE) / NULLIF(CAST(n AS DOUBLE), 0)
    END AS r
  FROM ranked
), segments AS (
  SELECT
    run_id,
    setting,
    e,
    r,
    LAG(e, 1, CAST(0.0 AS DOUBLE)) OVER (PARTITION BY run_id, setting ORDER BY i NULLS LAST) AS e_prev,
    LAG(r, 1, CAST(0.0 AS DOUBLE)) OVER (PARTITION BY run_id, setting ORDER BY i NULLS LAST) AS r_prev
  FROM recalls
), below AS (
  SELECT
    s.run_id,
    s.setting,
    a.t,
    CASE
      WHEN s.e < a.t
      THEN (
        s.e - s.e_prev
      ) * (
        s.r + s.r_prev
      ) / CAST(2.0 AS DOUBLE)
      ELSE CAST(0.0 AS DOUBLE)
    END AS area,
    CASE WHEN s.e < a.t THEN s.e END AS e_in,
    CASE WHEN s.e < a.t THEN s.r END AS r_in
  FROM segments AS s
  CROSS JOIN auc_ths AS a
), areas AS (
  SELECT
    run_id,
    setting,
    t,
    (
      CAST(SUM(CAST(area * POWER(2, 90) AS DECIMAL(38, 0))) AS DOUBLE) * POWER(2, -90) + (
        t - COALESCE(MAX(e_in), CAST(0.0 AS DOUBLE))
      ) * (
        COALESCE(MAX(r_in), CAST(0.0 AS DOUBLE)) + COALESCE(MAX(r_in), CAST(0.0 AS DOUBLE))
      ) / CAST(2.0 AS DOUBLE)
    ) / NULLIF(t, 0) AS value
  FROM below
  GROUP BY
    run_id,
    setting,
    t
), aucs AS (
  SELECT
    run_id,
    setting,
    t,
    CASE
      WHEN :auc <> 'gluefactory'
      THEN value
      WHEN value * CAST(10000.0 AS DOUBLE) - FLOOR(value * CAST(10000.0 AS DOUBLE)) = CAST(0.5 AS DOUBLE)
      AND FLOOR(FLOOR(value * CAST(10000.0 AS DOUBLE)) / CAST(2.0 AS DOUBLE)) * CAST(2.0 AS DOUBLE) = FLOOR(value * CAST(10000.0 AS DOUBLE))
      THEN FLOOR(value * CAST(10000.0 AS DOUBLE)) / CAST(10000.0 AS DOUBLE)
      WHEN value * CAST(10000.0 AS DOUBLE) - FLOOR(value * CAST(10000.0 AS DOUBLE)) = CAST(0.5 AS DOUBLE)
      THEN (
        FLOOR(value * CAST(10000.0 AS DOUBLE)) + CAST(1.0 AS DOUBLE)
      ) / CAST(10000.0 AS DOUBLE)
      ELSE ROUND(value * CAST(10000.0 AS DOUBLE)) / CAST(10000.0 AS DOUBLE)
    END AS value
  FROM areas
), maa AS (
  SELECT
    run_id,
    setting,
    (
      MAX(CASE WHEN t = CAST(5.0 AS DOUBLE) THEN value END) + MAX(CASE WHEN t = CAST(10.0 AS DOUBLE) THEN value END) + MAX(CASE WHEN t = CAST(20.0 AS DOUBLE) THEN value END)
    ) / CAST(3.0 AS DOUBLE) AS value
  FROM aucs
  GROUP BY
    run_id,
    setting
), best AS (
  SELECT
    run_id,
    MIN(setting) AS setting,
    MAX(maa) AS maa
  FROM (
    SELECT
      run_id,
      setting,
      value AS maa,
      MAX(value) OVER (PARTITION BY run_id) AS top
    FROM maa
  ) AS m
  WHERE
    maa = top
  GROUP BY
    run_id
)
SELECT
  a.run_id,
  CAST(NULL AS STRING) AS group_id,
  a.t AS threshold,
  a.value
FROM aucs AS a
JOIN best AS b
  ON b.run_id = a.run_id AND b.setting = a.setting
WHERE
  ARRAY_CONTAINS(:thresholds, a.t)
