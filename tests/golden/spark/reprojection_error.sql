-- GENERATED from sql/metrics/reprojection_error.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- reprojection_error: EventPoint's reprojection evaluation (HVGA ATIS). Per image pair, the
-- homography R estimated from its matches (RANSAC, stored at ingest as r11..r33, image 1 ->
-- image 0) maps each matched point (x1, y1) into image 0; the error of a match is the pixel
-- distance to its (x0, y0); the pair's value is the mean over its matches, NULL when the
-- estimation failed or the pair has no match.
-- The sum is exact, the same bits in any order of the matches (docs/metrics.md, "Determinism"):
-- with u the power of two at or above the pair's largest error m (a max does not depend on the
-- order) and n their number, mean = u * sum(err / u) / n; each err / u (exact) is in [0, 1],
-- and sum_exact adds them (below 2^90 * 2^35 < 10^38 at its scale: fewer than 2^35 matches a
-- pair).
-- A non-finite m (an estimate that sends a point to infinity) is the pair's value, as it is the
-- mean's.
-- Parameters: $runs integer[].
-- Output: run_id, group_id (pair), value (pixels; lower is better).
WITH estimates AS (
  SELECT
    run_id,
    pair_id,
    pair_no,
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
    m.pair_no,
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
    ON e.run_id = m.run_id AND e.pair_no = m.pair_no
  WHERE
    NOT e.r11 IS NULL
), errors AS (
  SELECT
    run_id,
    pair_no,
    SQRT((
      tx - x0
    ) * (
      tx - x0
    ) + (
      ty - y0
    ) * (
      ty - y0
    )) AS err
  FROM projected
), scales AS (
  SELECT
    run_id,
    pair_no,
    MAX(err) AS m,
    POWER(2, CEIL(LOG(2, NULLIF(MAX(err), 0)))) AS u,
    COUNT(err) AS n
  FROM errors
  GROUP BY
    run_id,
    pair_no
), sums AS (
  SELECT
    x.run_id,
    x.pair_no,
    CAST(SUM(CAST((
      x.err / NULLIF(s.u, 0)
    ) * POWER(2, 90) AS DECIMAL(38, 0))) AS DOUBLE) * POWER(2, -90) AS total
  FROM errors AS x
  JOIN scales AS s
    ON s.run_id = x.run_id AND s.pair_no = x.pair_no
  WHERE
    s.m * CAST(0.0 AS DOUBLE) = CAST(0.0 AS DOUBLE)
  GROUP BY
    x.run_id,
    x.pair_no
)
SELECT
  e.run_id,
  e.pair_id AS group_id,
  CASE
    WHEN s.m IS NULL
    THEN NULL
    WHEN NOT (
      s.m * CAST(0.0 AS DOUBLE) = CAST(0.0 AS DOUBLE)
    )
    THEN s.m
    WHEN s.m = 0
    THEN CAST(0.0 AS DOUBLE)
    ELSE t.total * s.u / NULLIF(CAST(s.n AS DOUBLE), 0)
  END AS value
FROM estimates AS e
LEFT JOIN scales AS s
  ON s.run_id = e.run_id AND s.pair_no = e.pair_no
LEFT JOIN sums AS t
  ON t.run_id = e.run_id AND t.pair_no = e.pair_no
