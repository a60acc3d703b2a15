-- Merge of a staged run: an ingest writes its one run into a private staging store (every
-- read, check and sort done there, without the store's lock), then these statements copy it
-- into the store in one short transaction (evalstore/staging.py). The staging store is
-- attached read-only as `__evalstore_stage` (not a store's own name, which is its file's stem),
-- with the store's schema version.

-- name: attach_staged
-- {path}: the staging file, a quoted literal (ATTACH takes no bound parameter).
attach {path} as __evalstore_stage (read_only);

-- name: detach_staged
detach __evalstore_stage;

-- name: staged_run
-- Out: the staged run's metadata (exactly one row in a staging store).
select experiment, name, created_at, git_commit, params::varchar as params, tags, notes
from __evalstore_stage.runs;

-- name: staged_list_span
-- Out: the first list id the staging store gave (where it started) and the next free one.
select coalesce((select min(list_id) from __evalstore_stage.groups), (select next from __evalstore_stage.list_id_next)),
       (select next from __evalstore_stage.list_id_next);

-- name: merge_groups
-- $run_id: the run's id in the store; $offset: added to each staged list id.
insert into groups by name
select * replace ($run_id::integer as run_id, list_id + $offset as list_id)
from __evalstore_stage.groups;

-- name: merge_rows
-- {rows}: one of the row tables (schema.ROW_TABLES), staged and stored alike; $offset as above.
insert into {rows} by name
select * replace (list_id + $offset as list_id)
from __evalstore_stage.{rows};

-- name: merge_list_stats
insert into list_stats by name
select * replace (list_id + $offset as list_id)
from __evalstore_stage.list_stats;

-- name: merge_positive_ranks
insert into positive_ranks by name
select * replace (list_id + $offset as list_id)
from __evalstore_stage.positive_ranks;

-- name: merge_pairs
insert into pairs by name
select * replace ($run_id::integer as run_id)
from __evalstore_stage.pairs;

-- name: merge_matches
insert into matches by name
select * replace ($run_id::integer as run_id)
from __evalstore_stage.matches;

-- name: merge_pair_cameras
insert into pair_cameras by name
select * replace ($run_id::integer as run_id)
from __evalstore_stage.pair_cameras;

-- name: merge_outcomes
insert into outcomes by name
select * replace ($run_id::integer as run_id)
from __evalstore_stage.outcomes;

-- name: merge_det_images
-- A detection run's rows (sql/schema/017_detections.sql): ids are the run's own, not list ids.
insert into det_images by name
select * replace ($run_id::integer as run_id)
from __evalstore_stage.det_images;

-- name: merge_det_categories
insert into det_categories by name
select * replace ($run_id::integer as run_id)
from __evalstore_stage.det_categories;

-- name: merge_det_truth
insert into det_truth by name
select * replace ($run_id::integer as run_id)
from __evalstore_stage.det_truth;

-- name: merge_det_boxes
insert into det_boxes by name
select * replace ($run_id::integer as run_id)
from __evalstore_stage.det_boxes;
