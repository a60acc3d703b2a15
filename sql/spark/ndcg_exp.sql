-- GENERATED from sql/metrics/ndcg_exp.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- ndcg_exp: normalised discounted cumulative gain over the whole ranked list, with exponential
-- gain 2^grade - 1 (Burges et al. 2005): DCG / IDCG, DCG = sum gain_i / log2(rank_i + 1) over the
-- retrieved items, IDCG the same for the list's judged items in decreasing order of gain. A NULL
-- gain is 1 for a +1 label, 0 else. Ties: under `grouped` the expected DCG over a random order
-- within each tie, else the policy's order (lib/dcg.sql). IDCG = 0 (no positive gain) -> NULL.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id, value (one row per list).
WITH cutoff AS (
  SELECT
    CAST(2147483647 AS BIGINT) AS k
), items AS (
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
), judged AS (
  SELECT
    s.run_id,
    s.list_id,
    s.item_id,
    s.score,
    s.label,
    s.seq,
    COALESCE(
      s.gain,
      CASE WHEN s.label = 1 THEN CAST(1.0 AS DOUBLE) ELSE CAST(0.0 AS DOUBLE) END
    ) AS gain,
    POWER(
      CAST(2.0 AS DOUBLE),
      COALESCE(
        s.gain,
        CASE WHEN s.label = 1 THEN CAST(1.0 AS DOUBLE) ELSE CAST(0.0 AS DOUBLE) END
      )
    ) - CAST(1.0 AS DOUBLE) AS gain_exp
  FROM scores AS s
  WHERE
    ARRAY_CONTAINS(:runs, s.run_id) AND s.task = :task AND s.label <> 0
), ranked AS (
  SELECT
    run_id,
    list_id,
    score,
    label,
    gain,
    gain_exp,
    ROW_NUMBER() OVER (
      PARTITION BY list_id
      ORDER BY score DESC, CASE
        WHEN :ties = 'optimistic'
        THEN -label
        WHEN :ties = 'pessimistic'
        THEN label
        ELSE 0
      END NULLS LAST, CASE WHEN :ties = 'docid' THEN item_id END DESC, seq NULLS LAST
    ) AS rn
  FROM judged
  WHERE
    NOT score IS NULL
), tie_groups AS (
  SELECT
    r.run_id,
    r.list_id,
    MIN(r.rn) AS a,
    COUNT(*) AS n,
    CAST(SUM(CASE WHEN r.label = 1 THEN 1 ELSE 0 END) AS BIGINT) AS r,
    SUM(r.gain) AS g,
    SUM(r.gain_exp) AS g_exp,
    SUM(CAST(1.0 AS DOUBLE) / NULLIF(LOG(2, r.rn + CAST(1.0 AS DOUBLE)), 0)) AS d,
    SUM(
      CASE
        WHEN r.rn <= c.k
        THEN CAST(1.0 AS DOUBLE) / NULLIF(LOG(2, r.rn + CAST(1.0 AS DOUBLE)), 0)
        ELSE CAST(0.0 AS DOUBLE)
      END
    ) AS d_k
  FROM ranked AS r
  CROSS JOIN cutoff AS c
  GROUP BY
    r.run_id,
    r.list_id,
    CASE WHEN :ties = 'grouped' THEN r.score ELSE CAST(r.rn AS DOUBLE) END
), dcg AS (
  SELECT
    run_id,
    list_id,
    SUM(g_exp * (
      d_k / NULLIF(CAST(n AS DOUBLE), 0)
    )) AS dcg
  FROM tie_groups
  GROUP BY
    run_id,
    list_id
), ideal_order AS (
  SELECT
    run_id,
    list_id,
    gain_exp,
    ROW_NUMBER() OVER (PARTITION BY list_id ORDER BY gain_exp DESC) AS pos
  FROM judged
), ideal AS (
  SELECT
    i.run_id,
    i.list_id,
    SUM(
      CASE
        WHEN i.pos <= c.k
        THEN i.gain_exp / NULLIF(LOG(2, i.pos + CAST(1.0 AS DOUBLE)), 0)
        ELSE CAST(0.0 AS DOUBLE)
      END
    ) AS ideal
  FROM ideal_order AS i
  CROSS JOIN cutoff AS c
  GROUP BY
    i.run_id,
    i.list_id
), ndcg AS (
  SELECT
    l.run_id,
    l.group_id,
    CASE
      WHEN i.ideal > 0
      THEN COALESCE(d.dcg, CAST(0.0 AS DOUBLE)) / NULLIF(i.ideal, 0)
    END AS value
  FROM lists AS l
  LEFT JOIN dcg AS d
    ON d.run_id = l.run_id AND d.list_id = l.list_id
  LEFT JOIN ideal AS i
    ON i.run_id = l.run_id AND i.list_id = l.list_id
)
SELECT
  run_id,
  group_id,
  value
FROM ndcg
