-- GENERATED from sql/metrics/precision_at_sigma.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- precision_at_sigma: EventPoint's matching precision. Per image pair, the fraction of its
-- matches within sigma pixels of the ground truth, strictly: [d < sigma] (the formula of
-- EventPoint); a pair without matches scores 0; the mean over pairs is
-- (1/N) sum_i sum_j [d_ij < sigma] / M_i.
-- Parameters: $runs integer[], $sigmas double[] (default 3, 6, 9 px).
-- Output: run_id, group_id (pair), sigma, value.
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
    EXPLODE(:sigmas) AS sigma
), thresholds AS (
  SELECT DISTINCT
    sigma AS t
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
      b.lo IS NULL OR m.d >= b.lo
    ) AND (
      b.hi IS NULL OR m.d < b.hi
    )
  GROUP BY
    m.run_id,
    m.pair_no,
    b.hi
), counts AS (
  SELECT
    c.run_id,
    c.pair_no,
    s.sigma,
    SUM(CASE WHEN c.hi <= s.sigma THEN c.n ELSE 0 END) AS hits,
    SUM(c.n) AS n
  FROM binned AS c
  CROSS JOIN sweep AS s
  GROUP BY
    c.run_id,
    c.pair_no,
    s.sigma
), per_pair AS (
  SELECT
    p.run_id,
    p.pair_id AS group_id,
    s.sigma,
    COALESCE(CAST(c.hits AS DOUBLE) / NULLIF(CAST(c.n AS DOUBLE), 0), CAST(0.0 AS DOUBLE)) AS value
  FROM run_pairs AS p
  CROSS JOIN sweep AS s
  LEFT JOIN counts AS c
    ON c.run_id = p.run_id AND c.pair_no = p.pair_no AND c.sigma = s.sigma
)
SELECT
  run_id,
  group_id,
  sigma,
  value
FROM per_pair
