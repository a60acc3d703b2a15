-- GENERATED from sql/metrics/recall_at_k.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- recall_at_k: TP_k / P over the top k ranked non-ignored items. Ties as in
-- lib/tp_at_k.sql. P = 0 -> NULL.
-- Parameters: $runs integer[], $task varchar, $ties varchar, $k integer >= 1.
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
    run_id,
    list_id,
    score,
    label,
    CASE
      WHEN :ties = 'optimistic'
      THEN -label
      WHEN :ties = 'pessimistic'
      THEN label
      ELSE 0
    END AS k1,
    CASE WHEN :ties = 'docid' THEN item_id END AS k3,
    CASE WHEN :ties = 'grouped' THEN 0 ELSE seq END AS k2
  FROM items
  WHERE
    label <> 0 AND NOT score IS NULL
), steps AS (
  SELECT
    run_id,
    list_id,
    score,
    k1,
    k3,
    k2,
    SUM(CASE WHEN label = 1 THEN 1 ELSE 0 END) AS d_tp,
    SUM(CASE WHEN label = -1 THEN 1 ELSE 0 END) AS d_fp
  FROM ranked
  GROUP BY
    run_id,
    list_id,
    score,
    k1,
    k3,
    k2
), points AS (
  SELECT
    run_id,
    list_id,
    d_tp,
    d_fp,
    SUM(d_tp) OVER w AS tp,
    SUM(d_fp) OVER w AS fp,
    ROW_NUMBER() OVER w AS rn
  FROM steps
  WINDOW w AS (
    PARTITION BY list_id
    ORDER BY score DESC, k1 NULLS LAST, k3 DESC, k2 NULLS LAST
    rows BETWEEN UNBOUNDED preceding AND CURRENT ROW
  )
), curve AS (
  SELECT
    p.run_id,
    p.list_id,
    l.group_id,
    p.rn,
    p.d_tp,
    p.d_fp,
    p.tp,
    p.fp,
    l.n_pos,
    l.n_neg,
    CAST(p.tp AS DOUBLE) / NULLIF(CAST(p.tp + p.fp AS DOUBLE), 0) AS prec,
    CAST(p.tp AS DOUBLE) / NULLIF(CAST(l.n_pos AS DOUBLE), 0) AS rec
  FROM points AS p
  JOIN lists AS l
    ON l.list_id = p.list_id
), at_k AS (
  SELECT
    l.run_id,
    l.list_id,
    l.group_id,
    l.n_pos,
    COALESCE(
      MAX(
        CASE
          WHEN c.tp + c.fp - c.d_tp - c.d_fp < :k AND :k <= c.tp + c.fp
          THEN CAST(c.tp - c.d_tp AS DOUBLE) + CAST((
            :k - (
              c.tp + c.fp - c.d_tp - c.d_fp
            )
          ) * c.d_tp AS DOUBLE) / NULLIF(CAST(c.d_tp + c.d_fp AS DOUBLE), 0)
        END
      ),
      CAST(MAX(c.tp) AS DOUBLE),
      CAST(0.0 AS DOUBLE)
    ) AS tp_k
  FROM lists AS l
  LEFT JOIN curve AS c
    ON c.list_id = l.list_id
  GROUP BY
    l.run_id,
    l.list_id,
    l.group_id,
    l.n_pos
)
SELECT
  run_id,
  group_id,
  CASE WHEN n_pos = 0 THEN NULL ELSE tp_k / NULLIF(CAST(n_pos AS DOUBLE), 0) END AS value
FROM at_k
