-- GENERATED from sql/metrics/homography_accuracy.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- homography_accuracy: SuperPoint's homography estimation accuracy. Per image pair, the four
-- corners (0, 0), (w-1, 0), (0, h-1), (w-1, h-1) are warped by the estimated homography
-- (e11..e33, image 0 -> 1, estimated as such: cv2.findHomography(kp0, kp1, RANSAC), as
-- SuperPoint) and by the true one (h11..h33); the corner error is the mean of
-- the four distances, (d1 + d2 + d3 + d4) / 4. The pair is correct (1) when it is <= eps,
-- else 0; a failed estimation counts as incorrect (0); a pair without a true homography or
-- size is NULL. The mean over pairs is the accuracy.
-- Parameters: $runs integer[], $eps double[] (default 1, 3, 5 px).
-- Output: run_id, group_id (pair), eps, value.
-- A pair whose estimate was stored before schema 10 (the inverse of the 1 -> 0 estimate) has
-- no value: re-ingest the run.
WITH candidates AS (
  SELECT
    *
  FROM pairs
  WHERE
    ARRAY_CONTAINS(:runs, run_id)
), corners AS (
  SELECT
    k,
    a,
    b
  FROM VALUES
    (1, 0, 0),
    (2, 1, 0),
    (3, 0, 1),
    (4, 1, 1) AS c(k, a, b)
), points AS (
  SELECT
    p.run_id,
    p.pair_id,
    c.k,
    CAST(c.a * (
      p.width - 1
    ) AS DOUBLE) AS x,
    CAST(c.b * (
      p.height - 1
    ) AS DOUBLE) AS y
  FROM candidates AS p
  CROSS JOIN corners AS c
  WHERE
    NOT p.h11 IS NULL AND NOT p.e11 IS NULL AND NOT p.width IS NULL
), warped AS (
  SELECT
    t.run_id,
    t.pair_id,
    t.k,
    (
      p.e11 * t.x + p.e12 * t.y + p.e13
    ) / NULLIF(p.e31 * t.x + p.e32 * t.y + p.e33, 0) AS ex,
    (
      p.e21 * t.x + p.e22 * t.y + p.e23
    ) / NULLIF(p.e31 * t.x + p.e32 * t.y + p.e33, 0) AS ey,
    (
      p.h11 * t.x + p.h12 * t.y + p.h13
    ) / NULLIF(p.h31 * t.x + p.h32 * t.y + p.h33, 0) AS hx,
    (
      p.h21 * t.x + p.h22 * t.y + p.h23
    ) / NULLIF(p.h31 * t.x + p.h32 * t.y + p.h33, 0) AS hy
  FROM points AS t
  JOIN candidates AS p
    ON p.run_id = t.run_id AND p.pair_id = t.pair_id
), distances AS (
  SELECT
    run_id,
    pair_id,
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
), corner_error AS (
  SELECT
    run_id,
    pair_id,
    (
      MAX(CASE WHEN k = 1 THEN d END) + MAX(CASE WHEN k = 2 THEN d END) + MAX(CASE WHEN k = 3 THEN d END) + MAX(CASE WHEN k = 4 THEN d END)
    ) / CAST(4.0 AS DOUBLE) AS err
  FROM distances
  GROUP BY
    run_id,
    pair_id
), sweep AS (
  SELECT
    EXPLODE(:eps) AS eps
)
SELECT
  p.run_id,
  p.pair_id AS group_id,
  s.eps,
  CASE
    WHEN p.h11 IS NULL OR p.width IS NULL OR p.height IS NULL
    THEN NULL
    WHEN p.e11 IS NULL
    THEN CAST(0.0 AS DOUBLE)
    WHEN p.e_direction IS DISTINCT FROM 'direct'
    THEN NULL
    WHEN c.err <= s.eps
    THEN CAST(1.0 AS DOUBLE)
    ELSE CAST(0.0 AS DOUBLE)
  END AS value
FROM candidates AS p
CROSS JOIN sweep AS s
LEFT JOIN corner_error AS c
  ON c.run_id = p.run_id AND c.pair_id = p.pair_id
