-- One value of TIDE's breakdown of a detection run (det_tide, made on first use by
-- evalstore/analysis/det_matching.py from tidecv's transcription): the row of error {error}
-- for the whole run, in percent as tidecv prints it. One row per run (group_id NULL): the
-- run's dAP is not a mean over categories (fixing an error can move a box to another class).
-- Parameters: $runs integer[]. Output: run_id, group_id, value.
select run_id, cast(null as varchar) as group_id, value
from det_tide
where list_contains($runs, run_id) and category_id is null and error = '{error}'
