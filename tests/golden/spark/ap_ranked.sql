-- GENERATED from sql/metrics/ap_ranked.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- ap_ranked: ap under the tie policies that rank one item at a time (`optimistic`,
-- `pessimistic`, `input`, `docid`; the registry chooses this file for them, ap.sql for
-- `grouped`):
--   AP = (1/P) * sum over the retrieved positives of j / i   (VLFeat vl_pr info.ap),
-- the positive at rank i in the policy's order being the j-th positive there. P = 0 -> NULL.
-- A list is read one of three ways, by what list_stats holds (n_scores: the distinct scores
-- of its n_ret retrieved, non-ignored items, or NULL: not counted):
-- * without tied scores (n_scores = n_ret), every policy ranks it as `grouped` does: its
--   (j, i) are the (tp, n) that ingest stored for ap.sql (positive_ranks), read without a sort;
-- * densely tied (n_scores < n_ret and 2 * n_scores <= n_ret: the lists that ingest indexes,
--   sql/lib/tied_ranks.sql, evalstore/ingest/rank_index.py), its k-th positive is at rank
--   n_optimistic, n_pessimistic, n_input or n_docid of tied_ranks: (j, i) = (k, n_<policy>),
--   read without a sort;
-- * any other list (a few ties, or n_scores not counted) is read as its tie groups (the items
--   of one score): a group of n items, p of them positive, after a items and b positives of
--   higher scores, holds the ranks a + 1 .. a + n and the positives b + 1 .. b + p. Only the
--   order within a group differs between policies: `optimistic` puts its positives first,
--   (j, i) = (b + k, a + k) for k = 1 .. p; `pessimistic` last, (b + k, a + n - p + k);
--   `input` and `docid` in the order of their seq, or of their item id (as text, greater
--   first, then seq) as trec_eval does, so that a positive is at i = a + (its place among the
--   group's items), j = b + (its place among the group's positives): a sort within each tie
--   group only, and for those two policies only.
-- Each way gives the same (j, i) as one sort of every row by the policy's keys, so the same
-- terms and (sum_exact) the same bits.
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
), tied AS (
  SELECT
    x.list_id,
    x.item_id,
    x.score,
    x.label,
    x.seq
  FROM items AS x
  JOIN lists AS l
    ON l.list_id = x.list_id
  WHERE
    x.label <> 0
    AND NOT x.score IS NULL
    AND (
      l.n_scores IS NULL OR (
        l.n_scores < l.n_ret AND 2 * l.n_scores > l.n_ret
      )
    )
), tie_groups AS (
  SELECT
    list_id,
    score,
    COUNT(*) AS n,
    CAST(SUM(CASE WHEN label = 1 THEN 1 ELSE 0 END) AS BIGINT) AS p
  FROM tied
  GROUP BY
    list_id,
    score
), starts AS (
  SELECT
    list_id,
    score,
    n,
    p,
    CAST(COALESCE(SUM(n) OVER w, 0) AS BIGINT) AS a,
    CAST(COALESCE(SUM(p) OVER w, 0) AS BIGINT) AS b
  FROM tie_groups
  WINDOW w AS (
    PARTITION BY list_id
    ORDER BY score DESC
    rows BETWEEN UNBOUNDED preceding AND 1 preceding
  )
), by_label AS (
  SELECT
    list_id,
    a,
    b,
    n,
    p,
    EXPLODE(IF((
      p + 1 - 1
    ) < 1, ARRAY(), SEQUENCE(1, (
      p + 1 - 1
    )))) AS k
  FROM starts
  WHERE
    p > 0
    AND (
      :ties IN ('optimistic', 'pessimistic')
      OR (
        :ties IN ('input', 'docid') AND p = n
      )
    )
), mixed AS (
  SELECT
    t.list_id,
    t.score,
    t.label,
    t.item_id,
    t.seq,
    s.a,
    s.b
  FROM tied AS t
  JOIN starts AS s
    ON s.list_id = t.list_id AND s.score = t.score
  WHERE
    :ties IN ('input', 'docid') AND s.p > 0 AND s.p < s.n
), placed AS (
  SELECT
    list_id,
    score,
    label,
    a,
    b,
    ROW_NUMBER() OVER (PARTITION BY list_id, score ORDER BY seq NULLS LAST) AS place
  FROM mixed
  WHERE
    :ties = 'input'
  UNION ALL
  SELECT
    list_id,
    score,
    label,
    a,
    b,
    ROW_NUMBER() OVER (PARTITION BY list_id, score ORDER BY item_id DESC, seq NULLS LAST) AS place
  FROM mixed
  WHERE
    :ties = 'docid'
), in_group AS (
  SELECT
    list_id,
    a,
    b,
    place,
    ROW_NUMBER() OVER (PARTITION BY list_id, score ORDER BY place NULLS LAST) AS k
  FROM placed
  WHERE
    label = 1
), precisions AS (
  SELECT
    l.run_id,
    l.list_id,
    CAST(p.tp AS DOUBLE) / NULLIF(CAST(p.n AS DOUBLE), 0) AS p
  FROM positive_ranks AS p
  JOIN lists AS l
    ON l.list_id = p.list_id
  WHERE
    l.n_scores = l.n_ret
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
  WHERE
    l.n_scores < l.n_ret AND 2 * l.n_scores <= l.n_ret
  UNION ALL
  SELECT
    l.run_id,
    l.list_id,
    CAST(g.b + g.k AS DOUBLE) / NULLIF(
      CAST(CASE WHEN :ties = 'pessimistic' THEN g.a + g.n - g.p + g.k ELSE g.a + g.k END AS DOUBLE),
      0
    ) AS p
  FROM by_label AS g
  JOIN lists AS l
    ON l.list_id = g.list_id
  UNION ALL
  SELECT
    l.run_id,
    l.list_id,
    CAST(r.b + r.k AS DOUBLE) / NULLIF(CAST(r.a + r.place AS DOUBLE), 0) AS p
  FROM in_group AS r
  JOIN lists AS l
    ON l.list_id = r.list_id
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
