-- GENERATED from sql/metrics/mma.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- mma: mean matching accuracy (D2-Net, HPatches). Per image pair, the fraction of its
-- matches within t pixels of the ground truth, inclusively: [d <= t] (as D2-Net's code); a
-- pair without matches scores 0; averaged over pairs, for t = 1..10 px: a curve.
-- Parameters: $runs integer[], $thresholds double[] (default 1, 2, ..., 10).
-- Output: run_id, group_id (pair), threshold, value.
WITH run_pairs AS (
  SELECT
    run_id,
    pair_id,
    pair_no
  FROM pairs
  WHERE
    ARRAY_CONTAINS(:runs, run_id)
), sweep AS (
  SELECT
    EXPLODE(:thresholds) AS threshold
), thresholds AS (
  SELECT DISTINCT
    threshold AS t
  FROM sweep
), bins AS (
  SELECT
    a.t AS lo,
    MIN(b.t) AS hi
  FROM thresholds AS a
  LEFT JOIN thresholds AS b
    ON b.t > a.t
  GROUP BY
    a.t
  UNION ALL
  SELECT
    CAST(NULL AS DOUBLE),
    MIN(t)
  FROM thresholds
), truth AS (
  SELECT
    m.run_id,
    m.pair_no,
    p.pair_id,
    m.x0,
    m.y0,
    m.x1,
    m.y1,
    m.score,
    COALESCE(
      m.gt_x1,
      (
        p.h11 * m.x0 + p.h12 * m.y0 + p.h13
      ) / NULLIF(p.h31 * m.x0 + p.h32 * m.y0 + p.h33, 0)
    ) AS gt_x1,
    COALESCE(
      m.gt_y1,
      (
        p.h21 * m.x0 + p.h22 * m.y0 + p.h23
      ) / NULLIF(p.h31 * m.x0 + p.h32 * m.y0 + p.h33, 0)
    ) AS gt_y1,
    m.seq
  FROM matches AS m
  JOIN pairs AS p
    ON p.run_id = m.run_id AND p.pair_no = m.pair_no
), distances AS (
  SELECT
    run_id,
    pair_no,
    SQRT((
      x1 - gt_x1
    ) * (
      x1 - gt_x1
    ) + (
      y1 - gt_y1
    ) * (
      y1 - gt_y1
    )) AS d
  FROM truth
  WHERE
    ARRAY_CONTAINS(:runs, run_id)
), binned AS (
  SELECT
    m.run_id,
    m.pair_no,
    b.hi,
    COUNT(*) AS n
  FROM distances AS m
  JOIN bins AS b
    ON (
      b.lo IS NULL OR m.d > b.lo
    ) AND (
      b.hi IS NULL OR m.d <= b.hi
    )
  GROUP BY
    m.run_id,
    m.pair_no,
    b.hi
), counts AS (
  SELECT
    c.run_id,
    c.pair_no,
    s.threshold,
    SUM(CASE WHEN c.hi <= s.threshold THEN c.n ELSE 0 END) AS hits,
    SUM(c.n) AS n
  FROM binned AS c
  CROSS JOIN sweep AS s
  GROUP BY
    c.run_id,
    c.pair_no,
    s.threshold
), per_pair AS (
  SELECT
    p.run_id,
    p.pair_id AS group_id,
    s.threshold,
    COALESCE(CAST(c.hits AS DOUBLE) / NULLIF(CAST(c.n AS DOUBLE), 0), CAST(0.0 AS DOUBLE)) AS value
  FROM run_pairs AS p
  CROSS JOIN sweep AS s
  LEFT JOIN counts AS c
    ON c.run_id = p.run_id AND c.pair_no = p.pair_no AND c.threshold = s.threshold
)
SELECT
  run_id,
  group_id,
  threshold,
  value
FROM per_pair
