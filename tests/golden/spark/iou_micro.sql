-- GENERATED from sql/metrics/iou_micro.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- iou_micro: pooled IOU of a run, sum TP / sum (TP + FP + FN) over its groups; NULL when
-- nothing was counted. One row per run (group_id NULL).
-- Parameters: $runs integer[].
-- Output: run_id, group_id, value.
SELECT
  run_id,
  CAST(NULL AS STRING) AS group_id,
  CAST(SUM(tp) AS DOUBLE) / NULLIF(CAST(SUM(tp + fp + fn) AS DOUBLE), 0) AS value
FROM outcomes
WHERE
  ARRAY_CONTAINS(:runs, run_id)
GROUP BY
  run_id
