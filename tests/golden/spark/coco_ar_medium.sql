-- GENERATED from sql/metrics/coco_ar_medium.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- coco_ar_medium: COCO's ARm (pycocotools COCOeval.summarize, bbox): AR of medium objects; per category,
-- its mean over categories with ground truth is ARm.
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
    AND p.area = 'medium'
    AND (
      NULL IS NULL OR t.iou = NULL
    )
), kept AS (
  SELECT
    l.run_id,
    l.list_id,
    m.seq,
    m.label_medium AS label
  FROM det_matches AS m
  JOIN lists AS l
    ON l.run_id = m.run_id AND l.group_id = m.category_id AND l.iou_index = m.iou_index
  WHERE
    m.matching = 'coco' AND m.label_medium <> 0 AND m.rank < 100
), per_list AS (
  SELECT
    l.run_id,
    l.list_id,
    l.group_id,
    CASE
      WHEN l.n_pos = 0
      THEN NULL
      ELSE CAST(COUNT(k.seq) AS DOUBLE) / NULLIF(CAST(l.n_pos AS DOUBLE), 0)
    END AS value
  FROM lists AS l
  LEFT JOIN kept AS k
    ON k.list_id = l.list_id AND k.label = 1
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
