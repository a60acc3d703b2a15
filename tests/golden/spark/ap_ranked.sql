-- GENERATED from sql/metrics/ap_ranked.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- ap_ranked: ap under the tie policies that rank one item at a time (`optimistic`,
-- `pessimistic`, `input`, `docid`; the registry chooses this file for them, ap.sql for
-- `grouped`):
--   AP = (1/P) * sum over the retrieved positives of j / i   (VLFeat vl_pr info.ap),
-- the positive at rank i in the policy's order being the j-th positive there. P = 0 -> NULL.
-- Nothing is sorted: ingest stored the ranks. A list without tied scores is ranked alike by
-- every policy: its (j, i) are the (tp, n) that ingest stored for ap.sql (positive_ranks). A
-- list with tied scores has a row per retrieved positive in tied_ranks
-- (sql/lib/tied_ranks.sql, evalstore/ingest/rank_index.py): its k-th positive is at rank
-- n_optimistic, n_pessimistic, n_input or n_docid, so (j, i) = (k, n_<policy>): the same
-- (j, i) as one sort of every row by the policy's keys, so the same terms and (sum_exact)
-- the same bits.
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
), tied_lists AS (
  SELECT DISTINCT
    t.list_id
  FROM tied_ranks AS t
  JOIN lists AS l
    ON l.list_id = t.list_id
), precisions AS (
  SELECT
    l.run_id,
    l.list_id,
    CAST(p.tp AS DOUBLE) / NULLIF(CAST(p.n AS DOUBLE), 0) AS p
  FROM positive_ranks AS p
  JOIN lists AS l
    ON l.list_id = p.list_id
  LEFT JOIN tied_lists AS t
    ON t.list_id = p.list_id
  WHERE
    t.list_id IS NULL
  UNION ALL
  SELECT
    l.run_id,
    l.list_id,
    CAST(t.k AS DOUBLE) / NULLIF(
      CAST(CASE
        WHEN :ties = 'optimistic'
        THEN t.n_optimistic
        WHEN :ties = 'pessimistic'
        THEN t.n_pessimistic
        WHEN :ties = 'input'
        THEN t.n_input
        ELSE t.n_docid
      END AS DOUBLE),
      0
    ) AS p
  FROM tied_ranks AS t
  JOIN lists AS l
    ON l.list_id = t.list_id
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
