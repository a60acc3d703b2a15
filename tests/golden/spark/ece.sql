-- GENERATED from sql/metrics/ece.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- ece: expected calibration error, L1, over $bins equal-width bins of the confidence (the
-- top-1 score, read as a probability in [0, 1]: evaluate refuses another) against the
-- accuracy (1 where the top-1 class is the true one; under grouped its probability):
-- sum over bins of |acc_bin - conf_bin| * n_bin / n, acc_bin and conf_bin the means of the
-- bin's samples. As torchmetrics' calibration_error (functional/classification/
-- calibration_error.py, _binning_bucketize and _ce_compute): the edges are
-- linspace(0, 1, B + 1), edge i = i * (1 / B) and the last 1.0; a confidence c goes to bin
-- (the edges <= c) - 1 (bucketize(right=True) - 1, searchsorted side='right' - 1), so a
-- confidence on an edge opens the bin above it and a confidence of exactly 1.0 is a bin of
-- its own (B + 1 bins in all). floor(c * B) is at most one bin from it; the edges correct it.
-- Single-label runs (lib/single_label.sql). One row per run and bin count (group_id NULL).
-- Parameters: $runs integer[], $task varchar, $ties varchar, $bins double[] (whole numbers
-- >= 1, default 15).
-- Output: run_id, group_id (NULL), bins, value.
WITH class_lists AS (
  SELECT
    g.run_id,
    g.list_id,
    g.group_id
  FROM groups AS g
  WHERE
    ARRAY_CONTAINS(:runs, g.run_id) AND g.task = :task AND NOT g.list_id IS NULL
), candidates AS (
  SELECT
    s.run_id,
    s.item_id,
    s.list_id,
    s.group_id,
    COALESCE(s.score, CAST('-infinity' AS DOUBLE)) AS score,
    s.label
  FROM scores AS s
  WHERE
    ARRAY_CONTAINS(:runs, s.run_id) AND s.task = :task AND s.label <> 0
), placed AS (
  SELECT
    t.run_id,
    t.item_id,
    t.list_id,
    t.group_id,
    t.score,
    MAX(c.score) AS conf,
    COUNT(CASE WHEN c.score > t.score THEN 1 END) AS above,
    COUNT(CASE WHEN c.score = t.score THEN 1 END) AS tied,
    COUNT(CASE WHEN c.score = t.score AND c.list_id < t.list_id THEN 1 END) AS earlier
  FROM candidates AS t
  JOIN candidates AS c
    ON c.run_id = t.run_id AND c.item_id = t.item_id
  WHERE
    t.label = 1
  GROUP BY
    t.run_id,
    t.item_id,
    t.list_id,
    t.group_id,
    t.score
), hits AS (
  SELECT
    run_id,
    item_id,
    list_id,
    group_id,
    conf,
    CASE
      WHEN :ties = 'grouped'
      THEN LEAST(
        GREATEST((
          1 - above
        ) / NULLIF(CAST(tied AS DOUBLE), 0), CAST(0.0 AS DOUBLE)),
        CAST(1.0 AS DOUBLE)
      )
      WHEN :ties = 'optimistic'
      THEN CASE WHEN above < 1 THEN CAST(1.0 AS DOUBLE) ELSE CAST(0.0 AS DOUBLE) END
      WHEN :ties = 'pessimistic'
      THEN CASE WHEN above + tied <= 1 THEN CAST(1.0 AS DOUBLE) ELSE CAST(0.0 AS DOUBLE) END
      ELSE CASE WHEN above + earlier < 1 THEN CAST(1.0 AS DOUBLE) ELSE CAST(0.0 AS DOUBLE) END
    END AS hit
  FROM placed
), sweep AS (
  SELECT
    EXPLODE(:bins) AS bins
), guessed AS (
  SELECT
    h.run_id,
    s.bins,
    h.conf,
    h.hit,
    LEAST(GREATEST(FLOOR(h.conf * s.bins), CAST(0.0 AS DOUBLE)), s.bins) AS j
  FROM hits AS h
  CROSS JOIN sweep AS s
), edges AS (
  SELECT
    run_id,
    bins,
    conf,
    hit,
    j,
    CASE
      WHEN j >= bins
      THEN CAST(1.0 AS DOUBLE)
      ELSE j * (
        CAST(1.0 AS DOUBLE) / NULLIF(bins, 0)
      )
    END AS lo,
    CASE
      WHEN j + 1 >= bins
      THEN CAST(1.0 AS DOUBLE)
      ELSE (
        j + 1
      ) * (
        CAST(1.0 AS DOUBLE) / NULLIF(bins, 0)
      )
    END AS hi
  FROM guessed
), binned AS (
  SELECT
    run_id,
    bins,
    conf,
    hit,
    CASE WHEN lo > conf THEN j - 1 WHEN j + 1 <= bins AND hi <= conf THEN j + 1 ELSE j END AS bin
  FROM edges
), per_bin AS (
  SELECT
    run_id,
    bins,
    bin,
    COUNT(*) AS n,
    CAST(SUM(CAST(conf * POWER(2, 90) AS DECIMAL(38, 0))) AS DOUBLE) * POWER(2, -90) / NULLIF(CAST(COUNT(*) AS DOUBLE), 0) AS conf_bin,
    CAST(SUM(CAST(hit * POWER(2, 90) AS DECIMAL(38, 0))) AS DOUBLE) * POWER(2, -90) / NULLIF(CAST(COUNT(*) AS DOUBLE), 0) AS acc_bin
  FROM binned
  GROUP BY
    run_id,
    bins,
    bin
), totals AS (
  SELECT
    run_id,
    bins,
    SUM(n) AS total
  FROM per_bin
  GROUP BY
    run_id,
    bins
)
SELECT
  b.run_id,
  CAST(NULL AS STRING) AS group_id,
  b.bins,
  CAST(SUM(
    CAST((
      ABS(b.acc_bin - b.conf_bin) * (
        b.n / NULLIF(CAST(t.total AS DOUBLE), 0)
      )
    ) * POWER(2, 90) AS DECIMAL(38, 0))
  ) AS DOUBLE) * POWER(2, -90) AS value
FROM per_bin AS b
JOIN totals AS t
  ON t.run_id = b.run_id AND t.bins = b.bins
GROUP BY
  b.run_id,
  b.bins
