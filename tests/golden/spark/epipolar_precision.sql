-- GENERATED from sql/metrics/epipolar_precision.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- epipolar_precision: per image pair with cameras, the fraction of its matches whose
-- symmetric epipolar distance to the true pose is below the threshold (lib/epipolar.sql;
-- SuperGlue's match_pairs.py: precision = mean(epi_errs < 5e-4), 0 for a pair without
-- matches; LoFTR's epidist_prec the same, at 1e-4 on MegaDepth). The run's value is the mean
-- over its pairs.
-- Parameters: $runs integer[], $thresholds double[] (default 5e-4).
-- Output: run_id, group_id (pair), threshold, value (0..1, higher is better).
WITH cameras AS (
  SELECT
    c.run_id,
    c.pair_no,
    p.pair_id,
    c.n_keypoints0,
    c.k0_11,
    c.k0_13,
    c.k0_22,
    c.k0_23,
    c.k1_11,
    c.k1_13,
    c.k1_22,
    c.k1_23,
    CAST(0.0 AS DOUBLE) * c.t_11 + (
      -c.t_34
    ) * c.t_21 + c.t_24 * c.t_31 AS e11,
    CAST(0.0 AS DOUBLE) * c.t_12 + (
      -c.t_34
    ) * c.t_22 + c.t_24 * c.t_32 AS e12,
    CAST(0.0 AS DOUBLE) * c.t_13 + (
      -c.t_34
    ) * c.t_23 + c.t_24 * c.t_33 AS e13,
    c.t_34 * c.t_11 + CAST(0.0 AS DOUBLE) * c.t_21 + (
      -c.t_14
    ) * c.t_31 AS e21,
    c.t_34 * c.t_12 + CAST(0.0 AS DOUBLE) * c.t_22 + (
      -c.t_14
    ) * c.t_32 AS e22,
    c.t_34 * c.t_13 + CAST(0.0 AS DOUBLE) * c.t_23 + (
      -c.t_14
    ) * c.t_33 AS e23,
    (
      -c.t_24
    ) * c.t_11 + c.t_14 * c.t_21 + CAST(0.0 AS DOUBLE) * c.t_31 AS e31,
    (
      -c.t_24
    ) * c.t_12 + c.t_14 * c.t_22 + CAST(0.0 AS DOUBLE) * c.t_32 AS e32,
    (
      -c.t_24
    ) * c.t_13 + c.t_14 * c.t_23 + CAST(0.0 AS DOUBLE) * c.t_33 AS e33
  FROM pair_cameras AS c
  JOIN pairs AS p
    ON p.run_id = c.run_id AND p.pair_no = c.pair_no
  WHERE
    ARRAY_CONTAINS(:runs, c.run_id)
), normalised AS (
  SELECT
    c.run_id,
    c.pair_no,
    c.e11,
    c.e12,
    c.e13,
    c.e21,
    c.e22,
    c.e23,
    c.e31,
    c.e32,
    c.e33,
    (
      m.x0 - c.k0_13
    ) / NULLIF(c.k0_11, 0) AS u0,
    (
      m.y0 - c.k0_23
    ) / NULLIF(c.k0_22, 0) AS v0,
    (
      m.x1 - c.k1_13
    ) / NULLIF(c.k1_11, 0) AS u1,
    (
      m.y1 - c.k1_23
    ) / NULLIF(c.k1_22, 0) AS v1
  FROM matches AS m
  JOIN cameras AS c
    ON c.run_id = m.run_id AND c.pair_no = m.pair_no
), products AS (
  SELECT
    run_id,
    pair_no,
    u1,
    v1,
    e11 * u0 + e12 * v0 + e13 AS ep0_1,
    e21 * u0 + e22 * v0 + e23 AS ep0_2,
    e31 * u0 + e32 * v0 + e33 AS ep0_3,
    u1 * e11 + v1 * e21 + e31 AS etp1_1,
    u1 * e12 + v1 * e22 + e32 AS etp1_2
  FROM normalised
), distances AS (
  SELECT
    run_id,
    pair_no,
    (
      u1 * ep0_1 + v1 * ep0_2 + ep0_3
    ) * (
      u1 * ep0_1 + v1 * ep0_2 + ep0_3
    ) * (
      CAST(1.0 AS DOUBLE) / NULLIF(ep0_1 * ep0_1 + ep0_2 * ep0_2, 0) + CAST(1.0 AS DOUBLE) / NULLIF(etp1_1 * etp1_1 + etp1_2 * etp1_2, 0)
    ) AS d
  FROM products
), epi_ths AS (
  SELECT
    EXPLODE(:thresholds) AS threshold
), counted AS (
  SELECT
    c.run_id,
    c.pair_no,
    s.threshold,
    COUNT(x.pair_no) AS n_matches,
    COUNT(CASE WHEN x.d < s.threshold THEN 1 END) AS n_correct
  FROM cameras AS c
  CROSS JOIN epi_ths AS s
  LEFT JOIN distances AS x
    ON x.run_id = c.run_id AND x.pair_no = c.pair_no
  GROUP BY
    c.run_id,
    c.pair_no,
    s.threshold
)
SELECT
  c.run_id,
  c.pair_id AS group_id,
  n.threshold,
  CASE
    WHEN n.n_matches = 0
    THEN CAST(0.0 AS DOUBLE)
    ELSE CAST(n.n_correct AS DOUBLE) / NULLIF(CAST(n.n_matches AS DOUBLE), 0)
  END AS value
FROM counted AS n
JOIN cameras AS c
  ON c.run_id = n.run_id AND c.pair_no = n.pair_no
