-- GENERATED from sql/metrics/ap.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- ap: non-interpolated average precision of each ranked list.
--   AP = sum over points t of (TP_t - TP_{t-1}) / P * P_t   (VLFeat vl_pr info.ap; with
--   `grouped` ties equal to scikit-learn's average_precision_score). P = 0 -> NULL.
-- Each retrieved positive adds P_t / P, P_t = TP / (TP + FP) at the point where it enters:
-- under `grouped` ties the end of its tie group, else its own rank in the policy's order.
-- Windows are partitioned by list_id, unique across runs, tasks and lists. Three ways to
-- the same values, chosen by the data:
--   (a) `grouped` ties, many tied scores: merge each tie into one point, then one window;
--   (b) `grouped` ties, few tied scores: ranks instead of running sums. With r the ascending
--       rank() of a row among the retrieved non-ignored items of its list (n of them) and q
--       that of a positive among the retrieved positives (m of them), a positive's tie group
--       ends with TP = m - q + 1 positives and TP + FP = n - r + 1 items;
--   (c) `optimistic`, `pessimistic`, `input`, `docid`: one point per rank, in the policy's order: a
--       positive at row_number() i among all items and j among the positives has P_t = j / i.
-- The sum over points is exact (docs/metrics.md, "Determinism"): each P_t, a double, is scaled
-- by 2^90 and rounded to an integer (exact for P_t >= 2^-38; P_t >= 1 / rows > 2^-31), times its
-- d_tp in (a), and the integers are added as decimal(38, 0): the same bits in any order of the
-- terms, on any number of threads, and the same sum by (a) and (b). It stays below
-- 2^90 * 2^31 < 10^38.
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
), label_counts AS (
  SELECT
    run_id,
    list_id,
    SUM(CASE WHEN label = 1 THEN 1 ELSE 0 END) AS n_pos_labels,
    SUM(CASE WHEN label = -1 THEN 1 ELSE 0 END) AS n_neg,
    SUM(CASE WHEN label <> 0 AND NOT score IS NULL THEN 1 ELSE 0 END) AS n_ret,
    SUM(CASE WHEN label = 1 AND NOT score IS NULL THEN 1 ELSE 0 END) AS p_ret
  FROM items
  GROUP BY
    run_id,
    list_id
), lists AS (
  SELECT
    c.run_id,
    c.list_id,
    g.group_id,
    COALESCE(g.n_positives, c.n_pos_labels) AS n_pos,
    c.n_neg,
    c.n_ret,
    c.p_ret
  FROM label_counts AS c
  JOIN groups AS g
    ON g.list_id = c.list_id
), ranked AS (
  SELECT
    run_id,
    list_id,
    score,
    label,
    seq,
    item_id
  FROM items
  WHERE
    label <> 0 AND NOT score IS NULL
), shape AS (
  SELECT
    :ties = 'grouped'
    AND COUNT(*) >= 2 * APPROX_COUNT_DISTINCT(HASH(run_id, list_id, score)) AS merge_ties
  FROM ranked
), terms AS (
  SELECT
    run_id,
    list_id,
    CAST(CAST(SUM(d_tp) OVER w AS DOUBLE) / NULLIF(CAST(SUM(d_n) OVER w AS DOUBLE), 0) * POWER(2, 90) AS DECIMAL(38, 0)) * d_tp AS term
  FROM (
    SELECT
      run_id,
      list_id,
      score,
      SUM(CASE WHEN label = 1 THEN 1 ELSE 0 END) AS d_tp,
      COUNT(*) AS d_n
    FROM ranked
    WHERE
      (
        SELECT
          merge_ties
        FROM shape
      )
    GROUP BY
      run_id,
      list_id,
      score
  )
  WINDOW w AS (
    PARTITION BY list_id
    ORDER BY score DESC
    rows BETWEEN UNBOUNDED preceding AND CURRENT ROW
  )
  UNION ALL
  SELECT
    p.run_id,
    p.list_id,
    CAST(CAST(l.p_ret - p.q + 1 AS DOUBLE) / NULLIF(CAST(l.n_ret - p.r + 1 AS DOUBLE), 0) * POWER(2, 90) AS DECIMAL(38, 0)) AS term
  FROM (
    SELECT
      run_id,
      list_id,
      r,
      RANK() OVER (PARTITION BY list_id ORDER BY score NULLS LAST) AS q
    FROM (
      SELECT
        run_id,
        list_id,
        score,
        label,
        RANK() OVER (PARTITION BY list_id ORDER BY score NULLS LAST) AS r
      FROM ranked
      WHERE
        :ties = 'grouped' AND NOT (
          SELECT
            merge_ties
          FROM shape
        )
    )
    WHERE
      label = 1
  ) AS p
  JOIN lists AS l
    ON l.list_id = p.list_id
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
