-- GENERATED from sql/metrics/ap_coco.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- ap_coco: COCO 101-point interpolated AP (pycocotools COCOeval.accumulate):
-- AP = 1/101 * sum over t in np.linspace(0, 1, 101) of env(first point with R >= t), 0 when
-- no point reaches t; env = the precision envelope. P = 0 -> NULL.
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
), enveloped AS (
  SELECT
    c.*,
    MAX(c.prec) OVER (
      PARTITION BY c.list_id
      ORDER BY c.rn NULLS LAST
      rows BETWEEN CURRENT ROW AND UNBOUNDED following
    ) AS env
  FROM curve AS c
), grid AS (
  SELECT
    *,
    k0 * CAST(0.01 AS DOUBLE) AS t_at,
    (
      k0 + 1
    ) * CAST(0.01 AS DOUBLE) AS t_above
  FROM (
    SELECT
      run_id,
      list_id,
      rn,
      env,
      rec,
      LEAST(100, GREATEST(0, CAST(FLOOR(rec / CAST(0.01 AS DOUBLE)) AS BIGINT))) AS k0
    FROM enveloped
  ) AS e
), served AS (
  SELECT
    run_id,
    list_id,
    env,
    n_le,
    LAG(n_le, 1, 0) OVER (PARTITION BY list_id ORDER BY rn NULLS LAST) AS n_before
  FROM (
    SELECT
      run_id,
      list_id,
      rn,
      env,
      1 + CASE
        WHEN k0 < 100 AND t_above <= rec
        THEN k0 + 1
        WHEN k0 > 0 AND t_at > rec
        THEN k0 - 1
        ELSE k0
      END AS n_le
    FROM grid
  ) AS g
), first_reached AS (
  SELECT
    run_id,
    list_id,
    env,
    EXPLODE(IF(n_before > (
      n_le - 1
    ), ARRAY(), SEQUENCE(n_before, (
      n_le - 1
    )))) AS k
  FROM served
  WHERE
    n_le > n_before
), per_list AS (
  SELECT
    l.run_id,
    l.list_id,
    l.group_id,
    CASE
      WHEN l.n_pos = 0
      THEN NULL
      ELSE COALESCE(
        CAST(SUM(CAST(f.env * POWER(2, 90) AS DECIMAL(38, 0))) AS DOUBLE) * POWER(2, -90),
        CAST(0.0 AS DOUBLE)
      ) / CAST(101 AS DOUBLE)
    END AS value
  FROM lists AS l
  LEFT JOIN first_reached AS f
    ON f.run_id = l.run_id AND f.list_id = l.list_id
  GROUP BY
    l.run_id,
    l.list_id,
    l.group_id,
    l.n_pos
)
SELECT
  run_id,
  group_id,
  value
FROM per_list
