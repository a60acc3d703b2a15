-- GENERATED from sql/metrics/homography_auc.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- homography_auc: the area under the cumulative curve of the corner errors of a run's
-- estimated homographies, up to each threshold t (pixels), over t (the HPatches homography
-- AUC of LoFTR's and LightGlue's papers; glue-factory's hpatches eval at 1, 3, 5 px). A pair's
-- corner error is the mean distance of the corners (0, 0), (w, 0), (w, h), (0, h) of image 0
-- warped by the estimate (e11..e33, image 0 -> 1) and by the truth (h11..h33), added in that
-- order (glue-factory's homography_corner_error, gluefactory/geometry/homography.py @
-- 2d17e3b3bd7d); +inf where estimation failed or a corner is sent to infinity; a pair without a true homography or size, or
-- whose estimate is the inverse of the image 1 -> 0 one (stored before schema 10), is left
-- out. The AUC follows $auc's code (lib/error_auc.sql: SuperGlue's, LoFTR's or glue-factory's
-- rounded one). The value is the run's, not a mean over pairs: one row of group_id NULL per t.
-- Parameters: $runs integer[], $thresholds double[] (default 1, 3, 5), $auc varchar.
-- Output: run_id, group_id (NULL), threshold, value (0..1, higher is better; NULL for a run
-- without such pairs).
WITH candidates AS (
  SELECT
    *
  FROM pairs
  WHERE
    ARRAY_CONTAINS(:runs, run_id)
    AND NOT h11 IS NULL
    AND NOT width IS NULL
    AND NOT height IS NULL
    AND (
      e11 IS NULL OR e_direction = 'direct'
    )
), corners AS (
  SELECT
    k,
    a,
    b
  FROM VALUES
    (1, 0, 0),
    (2, 1, 0),
    (3, 1, 1),
    (4, 0, 1) AS c(k, a, b)
), warped AS (
  SELECT
    p.run_id,
    p.pair_no,
    c.k,
    (
      p.e11 * c.a * p.width + p.e12 * c.b * p.height + p.e13
    ) / NULLIF(p.e31 * c.a * p.width + p.e32 * c.b * p.height + p.e33, 0) AS ex,
    (
      p.e21 * c.a * p.width + p.e22 * c.b * p.height + p.e23
    ) / NULLIF(p.e31 * c.a * p.width + p.e32 * c.b * p.height + p.e33, 0) AS ey,
    (
      p.h11 * c.a * p.width + p.h12 * c.b * p.height + p.h13
    ) / NULLIF(p.h31 * c.a * p.width + p.h32 * c.b * p.height + p.h33, 0) AS hx,
    (
      p.h21 * c.a * p.width + p.h22 * c.b * p.height + p.h23
    ) / NULLIF(p.h31 * c.a * p.width + p.h32 * c.b * p.height + p.h33, 0) AS hy
  FROM candidates AS p
  CROSS JOIN corners AS c
  WHERE
    NOT p.e11 IS NULL
), distances AS (
  SELECT
    run_id,
    pair_no,
    k,
    SQRT((
      ex - hx
    ) * (
      ex - hx
    ) + (
      ey - hy
    ) * (
      ey - hy
    )) AS d
  FROM warped
), corner_errors AS (
  SELECT
    run_id,
    pair_no,
    (
      MAX(CASE WHEN k = 1 THEN d END) + MAX(CASE WHEN k = 2 THEN d END) + MAX(CASE WHEN k = 3 THEN d END) + MAX(CASE WHEN k = 4 THEN d END)
    ) / CAST(4.0 AS DOUBLE) AS err
  FROM distances
  GROUP BY
    run_id,
    pair_no
), errors AS (
  SELECT
    p.run_id,
    CAST(0.0 AS DOUBLE) AS setting,
    COALESCE(c.err, CAST('Infinity' AS DOUBLE)) AS e
  FROM candidates AS p
  LEFT JOIN corner_errors AS c
    ON c.run_id = p.run_id AND c.pair_no = p.pair_no
), auc_ths AS (
  SELECT
    EXPLODE(:thresholds) AS t
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
), runs AS (
  SELECT DISTINCT
    run_id
  FROM pairs
  WHERE
    ARRAY_CONTAINS(:runs, run_id)
)
SELECT
  r.run_id,
  CAST(NULL AS STRING) AS group_id,
  a.t AS threshold,
  x.value
FROM runs AS r
CROSS JOIN auc_ths AS a
LEFT JOIN aucs AS x
  ON x.run_id = r.run_id AND x.t = a.t
