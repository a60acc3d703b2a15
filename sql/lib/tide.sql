-- One value of TIDE's breakdown of a detection run (det_tide, made on first use by
-- evalstore/analysis/det_matching.py from tidecv's transcription), error {error}, in percent as
-- tidecv prints it: the run's row (group_id NULL: run.ap, get_main_errors(),
-- get_special_errors()) and one row per category of the run (group_id = its category_id, as
-- COCO's per-category rows name it: its class's get_ap(), or the AP of that class in
-- fix_errors() minus it; NULL for a category tidecv never saw, with neither a detection nor a
-- ground truth). The run's dAP is not the mean over the categories (fixing an error can move
-- a box to another class; a dAP is clipped at 0 after the mean): the registry marks these
-- metrics overall = "run row", so evaluate stores the run's row as the run's value and the
-- categories' as its per-list values (sql/eval/eval.sql, insert_overall_given).
-- Parameters: $runs integer[]. Output: run_id, group_id, value.
with run_rows as (
    select run_id, value
    from det_tide
    where list_contains($runs, run_id) and category_id is null and error = '{error}'
)
select run_id, cast(null as varchar) as group_id, value
from run_rows
union all
select c.run_id, c.category_id as group_id, t.value
from run_rows r
join det_categories c on c.run_id = r.run_id
left join det_tide t
  on t.run_id = c.run_id and t.category_id = c.category_id and t.error = '{error}'
