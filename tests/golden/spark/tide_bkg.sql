-- GENERATED from sql/metrics/tide_bkg.sql by sqlglot (duckdb -> spark); do not
-- edit. Regenerate: python tools/write_spark_golden.py --write-golden
-- tide_bkg: dAP of removing background detections (IoU <= 0.1 with everything).
-- TIDE (Bolya et al., tidecv 1.0.1), in percent, one value per run.
-- Parameters: $runs integer[]. Output: run_id, group_id (NULL), value.
-- One value of TIDE's breakdown of a detection run (det_tide, made on first use by
-- evalstore/analysis/det_matching.py from tidecv's transcription): the row of error Bkg
-- for the whole run, in percent as tidecv prints it. One row per run (group_id NULL): the
-- run's dAP is not a mean over categories (fixing an error can move a box to another class).
-- Parameters: $runs integer[]. Output: run_id, group_id, value.
SELECT
  run_id,
  CAST(NULL AS STRING) AS group_id,
  value
FROM det_tide
WHERE
  ARRAY_CONTAINS(:runs, run_id) AND category_id IS NULL AND error = 'Bkg'
