-- GENERATED from sql/metrics/ap_ranked.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- ap_ranked: ap under the tie policies that rank one item at a time (`optimistic`,
-- `pessimistic`, `input`, `docid`; the registry chooses this file for them, ap.sql for
-- `grouped`):
--   AP = (1/P) * sum over the retrieved positives of j / i   (VLFeat vl_pr info.ap),
-- the positive at rank i in the policy's order being the j-th positive there. P = 0 -> NULL.
-- A list without tied scores (list_stats.n_scores = n_ret) is ranked alike by every policy:
-- its (j, i) are the (tp, n) that ingest stored for ap.sql, read without a sort.
-- Windows are partitioned by list_id, unique across runs, tasks and lists.
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
    x.run_id,
    x.list_id,
    x.label,
    ROW_NUMBER() OVER (
      PARTITION BY x.list_id
      ORDER BY x.score DESC, CASE
        WHEN :ties = 'optimistic'
        THEN -x.label
        WHEN :ties = 'pessimistic'
        THEN x.label
        ELSE 0
      END NULLS LAST, CASE WHEN :ties = 'docid' THEN x.item_id END DESC, x.seq NULLS LAST
    ) AS i
  FROM items AS x
  JOIN lists AS l
    ON l.list_id = x.list_id
  WHERE
    x.label <> 0
    AND NOT x.score IS NULL
    AND (
      l.n_scores IS NULL OR l.n_scores < l.n_ret
    )
), precisions AS (
  SELECT
    run_id,
    list_id,
    CAST(ROW_NUMBER() OVER (PARTITION BY list_id ORDER BY i NULLS LAST) AS DOUBLE) / NULLIF(CAST(i AS DOUBLE), 0) AS p
  FROM ranked
  WHERE
    label = 1
  UNION ALL
  SELECT
    l.run_id,
    l.list_id,
    CAST(p.tp AS DOUBLE) / NULLIF(CAST(p.n AS DOUBLE), 0) AS p
  FROM positive_ranks AS p
  JOIN lists AS l
    ON l.list_id = p.list_id
  WHERE
    l.n_scores = l.n_ret
), per_list AS (
  SELECT
    list_id,
    CAST(SUM(CAST(p * POWER(2, 90) AS DECIMAL(38, 0))) AS DOUBLE) * POWER(2, -90) AS s
  FROM precisions
  GROUP BY
    list_id
)
SELECT
  l.run_id,
  l.group_id,
  CASE
    WHEN l.n_pos = 0
    THEN NULL
    ELSE COALESCE(p.s, CAST(0.0 AS DOUBLE)) / NULLIF(CAST(l.n_pos AS DOUBLE), 0)
  END AS value
FROM lists AS l
LEFT JOIN per_list AS p
  ON p.list_id = l.list_id
