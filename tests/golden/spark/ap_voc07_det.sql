-- GENERATED from sql/metrics/ap_voc07_det.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- ap_voc07_det: PASCAL VOC detection AP of each class, as py-faster-rcnn voc_eval (ovmax > 0.5)
-- and voc_ap(use_07_metric=True): 11-point AP over np.arange(0, 1.1, 0.1).
-- Parameters: $runs integer[]. Output: run_id, group_id (the class), value.
WITH lists AS (
  SELECT
    run_id,
    category_id AS group_id,
    n_positives AS n_pos,
    CAST(run_id AS BIGINT) * 4294967296 + ROW_NUMBER() OVER (PARTITION BY run_id ORDER BY category_id NULLS LAST) AS list_id
  FROM det_positives
  WHERE
    ARRAY_CONTAINS(:runs, run_id) AND matching = 'voc_eval' AND area = 'all'
), marked AS (
  SELECT
    l.run_id,
    l.list_id,
    l.group_id,
    l.n_pos,
    m.seq,
    m.label,
    ROW_NUMBER() OVER (PARTITION BY l.list_id ORDER BY m.seq NULLS LAST) AS p
  FROM det_matches AS m
  JOIN lists AS l
    ON l.run_id = m.run_id AND l.group_id = m.category_id
  WHERE
    m.matching = 'voc_eval' AND m.label >= 0
), counted AS (
  SELECT
    run_id,
    list_id,
    group_id,
    n_pos,
    tp,
    seq - (
      p - tp
    ) AS rn,
    seq - (
      p - tp
    ) - tp AS fp
  FROM (
    SELECT
      run_id,
      list_id,
      group_id,
      n_pos,
      seq,
      p,
      ROW_NUMBER() OVER (PARTITION BY list_id ORDER BY seq NULLS LAST) AS tp
    FROM marked
    WHERE
      label = 1
  ) AS t
), curve AS (
  SELECT
    run_id,
    list_id,
    group_id,
    rn,
    n_pos,
    CAST(tp AS DOUBLE) / NULLIF(CAST(tp + fp AS DOUBLE), 0) AS prec,
    CAST(tp AS DOUBLE) / NULLIF(CAST(n_pos AS DOUBLE), 0) AS rec
  FROM counted
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
    k0 * CAST(0.1 AS DOUBLE) AS t_at,
    (
      k0 + 1
    ) * CAST(0.1 AS DOUBLE) AS t_above
  FROM (
    SELECT
      run_id,
      list_id,
      rn,
      env,
      rec,
      LEAST(10, GREATEST(0, CAST(FLOOR(rec / CAST(0.1 AS DOUBLE)) AS BIGINT))) AS k0
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
        WHEN k0 < 10 AND t_above <= rec
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
      ) / CAST(11 AS DOUBLE)
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
