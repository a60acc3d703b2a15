-- GENERATED from sql/metrics/coco_ap_large.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- coco_ap_large: COCO's APl (pycocotools COCOeval.summarize, bbox): AP of large objects (area > 96^2); per category,
-- its mean over categories with ground truth is APl.
-- Parameters: $runs integer[]. Output: run_id, group_id (the category), value.
WITH thresholds AS (
  SELECT
    run_id,
    iou_index,
    iou
  FROM det_thresholds
  WHERE
    (
      :runs IS NULL OR ARRAY_CONTAINS(:runs, run_id)
    ) AND matching = 'coco'
), lists AS (
  SELECT
    p.run_id,
    p.category_id AS group_id,
    t.iou_index,
    p.n_positives AS n_pos,
    CAST(p.run_id AS BIGINT) * 4294967296 + ROW_NUMBER() OVER (PARTITION BY p.run_id ORDER BY p.category_id NULLS LAST, t.iou_index NULLS LAST) AS list_id
  FROM det_positives AS p
  JOIN thresholds AS t
    ON t.run_id = p.run_id
  WHERE
    (
      :runs IS NULL OR ARRAY_CONTAINS(:runs, p.run_id)
    )
    AND p.matching = 'coco'
    AND p.area = 'large'
    AND (
      NULL IS NULL OR t.iou = NULL
    )
), kept AS (
  SELECT
    l.run_id,
    l.list_id,
    m.seq,
    m.label_large AS label
  FROM det_matches AS m
  JOIN lists AS l
    ON l.run_id = m.run_id AND l.group_id = m.category_id AND l.iou_index = m.iou_index
  WHERE
    m.matching = 'coco' AND m.label_large <> 0 AND m.rank < 100
), ranked AS (
  SELECT
    l.list_id,
    m.seq,
    CASE WHEN m.rank < 100 THEN m.label_large ELSE 0 END AS label,
    ROW_NUMBER() OVER (PARTITION BY l.list_id ORDER BY m.seq NULLS LAST) AS p
  FROM det_matches AS m
  JOIN lists AS l
    ON l.run_id = m.run_id AND l.group_id = m.category_id AND l.iou_index = m.iou_index
  WHERE
    m.matching = 'coco'
    AND CASE
      WHEN 'large' = 'all'
      THEN m.label_large >= 0 OR m.rank >= 100
      ELSE m.label_large <> 0 AND m.rank < 100
    END
), hits AS (
  SELECT
    list_id,
    tp,
    CASE WHEN 'large' = 'all' THEN seq + 1 - (
      p - tp
    ) ELSE p END AS rn
  FROM (
    SELECT
      list_id,
      seq,
      p,
      ROW_NUMBER() OVER (PARTITION BY list_id ORDER BY seq NULLS LAST) AS tp
    FROM ranked
    WHERE
      label = 1
  ) AS t
), enveloped AS (
  SELECT
    l.run_id,
    h.list_id,
    h.rn,
    CAST(h.tp AS DOUBLE) / NULLIF(
      CAST(h.rn - h.tp AS DOUBLE) + CAST(h.tp AS DOUBLE) + CAST(2.220446049250313e-16 AS DOUBLE),
      0
    ) AS env,
    CAST(h.tp AS DOUBLE) / NULLIF(CAST(l.n_pos AS DOUBLE), 0) AS rec
  FROM hits AS h
  JOIN lists AS l
    ON l.list_id = h.list_id
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
), steps AS (
  SELECT
    list_id,
    n_le,
    MAX(env) AS best
  FROM (
    SELECT
      list_id,
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
  GROUP BY
    list_id,
    n_le
), served AS (
  SELECT
    list_id,
    n_le,
    MAX(best) OVER (
      PARTITION BY list_id
      ORDER BY n_le DESC
      rows BETWEEN UNBOUNDED preceding AND CURRENT ROW
    ) AS env,
    LAG(n_le, 1, 0) OVER (PARTITION BY list_id ORDER BY n_le NULLS LAST) AS n_before
  FROM steps
), first_reached AS (
  SELECT
    list_id,
    env,
    EXPLODE(IF(n_before > (
      n_le - 1
    ), ARRAY(), SEQUENCE(n_before, (
      n_le - 1
    )))) AS k
  FROM served
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
    ON f.list_id = l.list_id
  GROUP BY
    l.run_id,
    l.list_id,
    l.group_id,
    l.n_pos
)
SELECT
  run_id,
  group_id,
  CAST(SUM(CAST(value * POWER(2, 90) AS DECIMAL(38, 0))) AS DOUBLE) * POWER(2, -90) / NULLIF(CAST(COUNT(value) AS DOUBLE), 0) AS value
FROM per_list
GROUP BY
  run_id,
  group_id
