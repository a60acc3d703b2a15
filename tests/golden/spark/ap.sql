-- GENERATED from sql/metrics/ap.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- ap: non-interpolated average precision of each ranked list.
--   AP = sum over points t of (TP_t - TP_{t-1}) / P * P_t   (VLFeat vl_pr info.ap; with
--   `grouped` ties equal to scikit-learn's average_precision_score). P = 0 -> NULL.
-- Each retrieved positive adds P_t / P, P_t = TP / (TP + FP) at the point where it enters:
-- under `grouped` ties the end of its tie group, else its own rank in the policy's order.
-- Two ways, by tie policy:
--   (a) `grouped`: no sort at all. Ingest stored, for each retrieved positive, the point where
--       its tie group ends (positive_ranks, sql/lib/list_index.sql): TP = tp, TP + FP = n.
--       A list without tied scores (list_stats.n_scores = n_ret) is ranked alike by every
--       policy, and takes this way under all of them;
--   (b) `optimistic`, `pessimistic`, `input`, `docid` on the other lists: one point per
--       rank, in the policy's order: a positive at row_number() i among all items and j among the positives has
--       P_t = j / i. Windows are partitioned by list_id, unique across runs, tasks and lists.
-- The sum over points is exact (docs/metrics.md, "Determinism"): each P_t, a double, is scaled
-- by 2^90 and rounded to an integer (exact for P_t >= 2^-38; P_t >= 1 / rows > 2^-31), and the
-- integers are added as decimal(38, 0): the same bits in any order of the terms, on any
-- number of threads. It stays below 2^90 * 2^31 < 10^38.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id, value (one row per list).
WITH items AS (
  SELECT
    s.run_id,
    s.list_id,
    s.item_id,
    s.score,
    s.label,
    s.seq
  FROM scores AS s
  WHERE
    ARRAY_CONTAINS(:runs, s.run_id) AND s.task = :task
), lists AS (
  SELECT
    g.run_id,
    g.list_id,
    g.group_id,
    COALESCE(g.n_positives, c.n_pos_labels) AS n_pos,
    c.n_neg,
    c.n_ret,
    c.p_ret,
    c.n_scores
  FROM groups AS g
  JOIN list_stats AS c
    ON c.list_id = g.list_id
  WHERE
    ARRAY_CONTAINS(:runs, g.run_id) AND g.task = :task
), ranked AS (
  SELECT
    i.run_id,
    i.list_id,
    i.score,
    i.label,
    i.seq,
    i.item_id
  FROM items AS i
  JOIN lists AS l
    ON l.list_id = i.list_id
  WHERE
    i.label <> 0
    AND NOT i.score IS NULL
    AND :ties <> 'grouped'
    AND (
      l.n_scores IS NULL OR l.n_scores < l.n_ret
    )
), terms AS (
  SELECT
    l.run_id,
    l.list_id,
    CAST(CAST(p.tp AS DOUBLE) / NULLIF(CAST(p.n AS DOUBLE), 0) * POWER(2, 90) AS DECIMAL(38, 0)) AS term
  FROM positive_ranks AS p
  JOIN lists AS l
    ON l.list_id = p.list_id
  WHERE
    :ties = 'grouped' OR l.n_scores = l.n_ret
  UNION ALL
  SELECT
    run_id,
    list_id,
    CAST(CAST(j AS DOUBLE) / NULLIF(CAST(i AS DOUBLE), 0) * POWER(2, 90) AS DECIMAL(38, 0)) AS term
  FROM (
    SELECT
      run_id,
      list_id,
      i,
      ROW_NUMBER() OVER (PARTITION BY list_id ORDER BY score DESC, k1 NULLS LAST, k3 DESC, seq NULLS LAST) AS j
    FROM (
      SELECT
        run_id,
        list_id,
        score,
        label,
        seq,
        CASE
          WHEN :ties = 'optimistic'
          THEN -label
          WHEN :ties = 'pessimistic'
          THEN label
          ELSE 0
        END AS k1,
        CASE WHEN :ties = 'docid' THEN item_id END AS k3,
        ROW_NUMBER() OVER (
          PARTITION BY list_id
          ORDER BY score DESC, CASE
            WHEN :ties = 'optimistic'
            THEN -label
            WHEN :ties = 'pessimistic'
            THEN label
            ELSE 0
          END NULLS LAST, CASE WHEN :ties = 'docid' THEN item_id END DESC, seq NULLS LAST
        ) AS i
      FROM ranked
      WHERE
        :ties <> 'grouped'
    )
    WHERE
      label = 1
  )
), per_list AS (
  SELECT
    run_id,
    list_id,
    SUM(term) AS s
  FROM terms
  GROUP BY
    run_id,
    list_id
)
SELECT
  l.run_id,
  l.group_id,
  CASE
    WHEN l.n_pos = 0
    THEN NULL
    ELSE COALESCE(CAST(p.s AS DOUBLE) * POWER(2, -90), CAST(0.0 AS DOUBLE)) / NULLIF(CAST(l.n_pos AS DOUBLE), 0)
  END AS value
FROM lists AS l
LEFT JOIN per_list AS p
  ON p.list_id = l.list_id
