-- GENERATED from sql/metrics/pose_error.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- pose_error: per image pair, max(err_t, err_r) in degrees of its relative pose estimate
-- (pose_estimates: the translation direction's angle folded to at most 90 degrees and the
-- rotation's angle, SuperGlue's compute_pose_error; +inf where estimation failed), at the
-- RANSAC threshold of lib/pose_best.sql. The run's value is the median over its pairs (a mean
-- would be infinite with one failure): the middle error, or the mean of the two middle ones
-- (np.median), which is +inf when more than half the pairs failed; under $auc = 'gluefactory'
-- rounded to 3 decimals, half to even, as glue-factory's summary (round(np.median(arr), 3)).
-- Parameters: $runs integer[], $method varchar, $confidence double,
-- $ransac_thresholds double[], $auc varchar.
-- Output: run_id, group_id (pair; NULL: the run's median), value (degrees, lower is better).
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
    EXPLODE(ARRAY(CAST(5.0 AS DOUBLE))) AS t
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
), chosen AS (
  SELECT
    e.run_id,
    e.pair_no,
    e.e,
    ROW_NUMBER() OVER (PARTITION BY e.run_id ORDER BY e.e NULLS LAST) AS i,
    COUNT(*) OVER (PARTITION BY e.run_id) AS n
  FROM errors AS e
  JOIN best AS b
    ON b.run_id = e.run_id AND b.setting = e.setting
), medians AS (
  SELECT
    run_id,
    SUM(CASE WHEN 2 * i >= n AND 2 * i <= n + 2 THEN e END) / NULLIF(CAST(COUNT(CASE WHEN 2 * i >= n AND 2 * i <= n + 2 THEN e END) AS DOUBLE), 0) AS m
  FROM chosen
  GROUP BY
    run_id
)
SELECT
  c.run_id,
  p.pair_id AS group_id,
  c.e AS value
FROM chosen AS c
JOIN pairs AS p
  ON p.run_id = c.run_id AND p.pair_no = c.pair_no
UNION ALL
SELECT
  run_id,
  CAST(NULL AS STRING) AS group_id,
  CASE
    WHEN :auc <> 'gluefactory' OR NOT (
      m < CAST(1e15 AS DOUBLE)
    )
    THEN m
    WHEN m * CAST(1000.0 AS DOUBLE) - FLOOR(m * CAST(1000.0 AS DOUBLE)) = CAST(0.5 AS DOUBLE)
    AND FLOOR(FLOOR(m * CAST(1000.0 AS DOUBLE)) / CAST(2.0 AS DOUBLE)) * CAST(2.0 AS DOUBLE) = FLOOR(m * CAST(1000.0 AS DOUBLE))
    THEN FLOOR(m * CAST(1000.0 AS DOUBLE)) / CAST(1000.0 AS DOUBLE)
    WHEN m * CAST(1000.0 AS DOUBLE) - FLOOR(m * CAST(1000.0 AS DOUBLE)) = CAST(0.5 AS DOUBLE)
    THEN (
      FLOOR(m * CAST(1000.0 AS DOUBLE)) + CAST(1.0 AS DOUBLE)
    ) / CAST(1000.0 AS DOUBLE)
    ELSE ROUND(m * CAST(1000.0 AS DOUBLE)) / CAST(1000.0 AS DOUBLE)
  END AS value
FROM medians
