-- GENERATED from sql/metrics/tide_dupe.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- tide_dupe: dAP of removing duplicate detections.
-- TIDE (Bolya et al., tidecv 1.0.1), in percent: the run's value and each category's.
-- Parameters: $runs integer[]. Output: run_id, group_id (NULL: the run; else the category), value.
-- One value of TIDE's breakdown of a detection run (det_tide, made on first use by
-- evalstore/analysis/det_matching.py from tidecv's transcription), error Dupe, in percent as
-- tidecv prints it: the run's row (group_id NULL: run.ap, get_main_errors(),
-- get_special_errors()) and one row per category of the run (group_id = its category_id, as
-- COCO's per-category rows name it: its class's get_ap(), or the AP of that class in
-- fix_errors() minus it; NULL for a category tidecv never saw, with neither a detection nor a
-- ground truth). The run's dAP is not the mean over the categories (fixing an error can move
-- a box to another class; a dAP is clipped at 0 after the mean): the registry marks these
-- metrics overall = "run row", so evaluate stores the run's row as the run's value and the
-- categories' as its per-list values (sql/eval/eval.sql, insert_overall_given).
-- Parameters: $runs integer[]. Output: run_id, group_id, value.
WITH run_rows AS (
  SELECT
    run_id,
    value
  FROM det_tide
  WHERE
    ARRAY_CONTAINS(:runs, run_id) AND category_id IS NULL AND error = 'Dupe'
)
SELECT
  run_id,
  CAST(NULL AS STRING) AS group_id,
  value
FROM run_rows
UNION ALL
SELECT
  c.run_id,
  c.category_id AS group_id,
  t.value
FROM run_rows AS r
JOIN det_categories AS c
  ON c.run_id = r.run_id
LEFT JOIN det_tide AS t
  ON t.run_id = c.run_id AND t.category_id = c.category_id AND t.error = 'Dupe'
