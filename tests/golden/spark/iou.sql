-- GENERATED from sql/metrics/iou.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- iou: per group (image pair, sequence), IOU = TP / (TP + FP + FN) (EventPoint); NULL when
-- the group counted nothing. Its mean over groups is the macro IOU.
-- Parameters: $runs integer[].
-- Output: run_id, group_id, value.
SELECT
  run_id,
  group_id,
  CAST(tp AS DOUBLE) / NULLIF(CAST(tp + fp + fn AS DOUBLE), 0) AS value
FROM outcomes
WHERE
  ARRAY_CONTAINS(:runs, run_id)
