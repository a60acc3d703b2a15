-- GENERATED from sql/metrics/reprojection_error.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- reprojection_error: EventPoint's reprojection evaluation (HVGA ATIS). Per image pair, the
-- homography R estimated from its matches (RANSAC, stored at ingest as r11..r33, image 1 ->
-- image 0) maps each matched point (x1, y1) into image 0; the error of a match is the pixel
-- distance to its (x0, y0); the pair's value is the mean over its matches, NULL when the
-- estimation failed or the pair has no match.
-- Parameters: $runs integer[].
-- Output: run_id, group_id (pair), value (pixels; lower is better).
WITH estimates AS (
  SELECT
    run_id,
    pair_id,
    r11,
    r12,
    r13,
    r21,
    r22,
    r23,
    r31,
    r32,
    r33
  FROM pairs
  WHERE
    ARRAY_CONTAINS(:runs, run_id)
), projected AS (
  SELECT
    m.run_id,
    m.pair_id,
    m.x0,
    m.y0,
    (
      e.r11 * m.x1 + e.r12 * m.y1 + e.r13
    ) / NULLIF(e.r31 * m.x1 + e.r32 * m.y1 + e.r33, 0) AS tx,
    (
      e.r21 * m.x1 + e.r22 * m.y1 + e.r23
    ) / NULLIF(e.r31 * m.x1 + e.r32 * m.y1 + e.r33, 0) AS ty
  FROM matches AS m
  JOIN estimates AS e
    ON e.run_id = m.run_id AND e.pair_id = m.pair_id
  WHERE
    NOT e.r11 IS NULL
), errors AS (
  SELECT
    run_id,
    pair_id,
    AVG(SQRT((
      tx - x0
    ) * (
      tx - x0
    ) + (
      ty - y0
    ) * (
      ty - y0
    ))) AS err
  FROM projected
  GROUP BY
    run_id,
    pair_id
)
SELECT
  e.run_id,
  e.pair_id AS group_id,
  r.err AS value
FROM estimates AS e
LEFT JOIN errors AS r
  ON r.run_id = e.run_id AND r.pair_id = e.pair_id
