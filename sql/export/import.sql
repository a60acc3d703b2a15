-- Import of one run of an export folder (evalstore/scale/importer.py). `_import` is the
-- Parquet file of one (table, run), registered as a view; `_list_map` maps the run's old list
-- ids (or, before schema 6, its (task, group_id)) to new ones (export.sql: map_list_ids).
-- Table and column names cannot be bound: {columns} is a comma-separated list of quoted
-- columns of the manifest that the target table also has (importer.py checks them against
-- table_columns); {source_columns} is the same list of source_column entries.

-- name: import_run_row
-- The runs row of the export, under a new run id. Output: run_id, the new id (one row).
insert into runs ({columns})
select {columns}
from _import
returning run_id;

-- name: import_rows
-- The rows of a table without lists (matches, pairs, outcomes), for the new run $run_id
-- INTEGER. {table}: the quoted table. Output: the number of rows inserted.
insert into {table} (run_id, {columns})
select $run_id, {columns}
from _import;

-- name: import_pairs_numbered
-- As import_rows for the pairs of an export written before schema 15 (no pair_no): each pair
-- numbered within the run in the order of its id, as migration 015 numbers a store's pairs.
insert into pairs (run_id, {columns}, pair_no)
select $run_id, {columns},
       cast(row_number() over (order by pair_id) - 1 as integer)
from _import;

-- name: import_matches_by_pair_id
-- As import_rows for the matches of an export written before schema 15, which name their
-- pair by its id: each gets the number of its pair, imported just before (a match of a pair
-- without a pairs row is not inserted, and the count check refuses the run). {columns}: the
-- matches columns but pair_id; {source_columns}: the same, each a source_column.
insert into matches (run_id, {columns}, pair_no)
select $run_id, {source_columns}, p.pair_no
from _import i
join pairs p on p.run_id = $run_id and p.pair_id = i.pair_id;

-- name: import_scores
-- The ranked items of the run into the row table {table} (quoted, one of ROW_TABLES), each
-- list under its new id. Output: the number of rows inserted.
insert into {table} (list_id, item, score, label, seq)
select m.new_id, i.item_id, i.score, i.label, i.seq
from _import i
left join _list_map m on m.old_id = i.list_id;

-- name: import_scores_gains
-- As import_scores for an export from schema 16 on, whose items carry their gains.
insert into {table} (list_id, item, score, label, seq, gain)
select m.new_id, i.item_id, i.score, i.label, i.seq, i.gain
from _import i
left join _list_map m on m.old_id = i.list_id;

-- name: import_scores_by_group
-- As import_scores for an export written before schema 6, whose lists have no ids: a list
-- is a (task, group_id).
insert into {table} (list_id, item, score, label, seq)
select m.new_id, i.item_id, i.score, i.label, i.seq
from _import i
left join _list_map m on m.task = i.task and m.group_id is not distinct from i.group_id;

-- name: source_column
-- A column {column} (quoted) of `_import`, named where `_list_map` has one of the same name.
i.{column}

-- name: import_groups
-- The groups rows of the run $run_id INTEGER, each under its list's new id. {columns}: the
-- groups columns but list_id; {source_columns}: the same, each a source_column. Output: the
-- number of rows inserted.
insert into groups (run_id, {columns}, list_id)
select $run_id, {source_columns}, m.new_id
from _import i
left join _list_map m on m.old_id = i.list_id;

-- name: import_groups_by_group
-- As import_groups for an export written before schema 6 (a list is a (task, group_id)).
insert into groups (run_id, {columns}, list_id)
select $run_id, {source_columns}, m.new_id
from _import i
left join _list_map m on m.task = i.task and m.group_id is not distinct from i.group_id;

-- name: groups_of_no_list
-- The groups rows of `_import_ids` (the list_id and group_id of one run's groups partition,
-- with list ids) whose list id is
-- no list of the run's scores (`_list_map`, made from them): ingest writes a groups row for
-- each list it writes and refuses one of no list (evalstore/ingest/lists.py check_matched),
-- and a list has rows. A NULL list id is a metadata row, which ingest wrote before it
-- refused them: kept, as the store it came from holds it. Output: n (rows), list_id and
-- group_id of one example (one row; n = 0 when every row describes a list).
select count(*) as n, any_value(i.list_id) as list_id, any_value(i.group_id) as group_id
from _import_ids i
where i.list_id is not null
  and not exists (select 1 from _list_map m where m.old_id = i.list_id);

-- name: imported_item_problems
-- What is wrong with the ranked items just imported into the row table {table} (quoted, one
-- of ROW_TABLES) under the new list ids $first INTEGER .. $last INTEGER of the run $run_id
-- INTEGER, as ingest would have refused it: a NaN or +inf score (-inf is "not retrieved"), a
-- label other than -1, 0, 1, an item twice in one list, a list without a groups row of the
-- run, a gain that is negative, NaN or infinite (evalstore/ingest/validate.py), gains given
-- for some items of a task and not others (ingest gives every row one or none), a seq (the
-- input position, by which ties are ordered) negative or twice in one list, an n_positives
-- negative or below the list's +1 labels (store/n_positives_below_labels). Output: problem,
-- n (rows), group_id, item_id, value (of one example row); one row per kind of problem
-- found, none when the rows are sound.
with items as (
    select r.list_id, cast(r.item as varchar) as item_id, cast(r.score as double) as score,
           r.label, r.gain, r.seq, g.task, g.group_id, g.list_id is not null as listed
    from {table} r
    left join groups g on g.run_id = $run_id and g.list_id = r.list_id
    where r.list_id between $first and $last
),
twice as (
    select list_id, item_id, count(*) as n
    from items
    group by list_id, item_id
    having count(*) > 1
),
seq_twice as (
    select list_id, seq, count(*) as n
    from items
    group by list_id, seq
    having count(*) > 1
),
graded as (
    select task, count(gain) as given, count(*) - count(gain) as missing,
           any_value(group_id) filter (where gain is null) as group_id,
           any_value(item_id) filter (where gain is null) as item_id
    from items
    group by task
    having count(gain) > 0 and count(gain) < count(*)
),
positives as (
    select g.group_id, g.n_positives, count(i.list_id) filter (where i.label = 1) as n_pos
    from groups g
    left join items i on i.list_id = g.list_id
    where g.run_id = $run_id and g.n_positives is not null
    group by g.list_id, g.group_id, g.n_positives
    having g.n_positives < greatest(count(i.list_id) filter (where i.label = 1), 0)
)
select 'score' as problem, count(*) as n, any_value(group_id) as group_id,
       any_value(item_id) as item_id, any_value(cast(score as varchar)) as value
from items
where isnan(score) or score = cast('infinity' as double)
having count(*) > 0
union all
select 'label', count(*), any_value(group_id), any_value(item_id),
       any_value(cast(label as varchar))
from items
where label not in (-1, 0, 1)
having count(*) > 0
union all
select 'duplicate', sum(t.n), any_value(g.group_id), any_value(t.item_id),
       any_value(cast(t.n as varchar))
from twice t
left join groups g on g.run_id = $run_id and g.list_id = t.list_id
having count(*) > 0
union all
select 'unlisted', count(*), null, any_value(item_id), null
from items
where not listed
having count(*) > 0
union all
select 'gain', count(*), any_value(group_id), any_value(item_id),
       any_value(cast(gain as varchar))
from items
where gain < 0 or isnan(gain) or isinf(gain)
having count(*) > 0
union all
select 'gains', sum(missing), any_value(group_id), any_value(item_id),
       any_value(task || ': ' || given || ' with a gain')
from graded
having count(*) > 0
union all
select 'seq', count(*), any_value(group_id), any_value(item_id), any_value(cast(seq as varchar))
from items
where seq < 0
having count(*) > 0
union all
select 'seq_twice', sum(t.n), any_value(g.group_id), null, any_value(cast(t.seq as varchar))
from seq_twice t
left join groups g on g.run_id = $run_id and g.list_id = t.list_id
having count(*) > 0
union all
select 'n_positives', count(*), any_value(group_id), null,
       any_value(n_positives || ' but ' || n_pos)
from positives
having count(*) > 0;

-- name: imported_row_problems
-- What is wrong with the keypoint matches and outcomes just imported for the run $run_id
-- INTEGER, as ingest would have refused it: a match coordinate that is NaN or infinite, a
-- NaN score, a match of a pair without its pairs row, a match without a finite truth (none
-- stored, no homography of its pair that sends it to a finite point, and no cameras of its
-- pair), cameras of a pair without its pairs row, a pose estimate of a pair without cameras,
-- a match seq (its
-- input position) negative or twice in the run, a pair number twice in the run, a negative
-- count, a count above $max_count BIGINT or a group's tp + fp + fn above it (ingest's bound,
-- evalstore/ingest/outcomes.py MAX_COUNT: 2^53, exact as a double), a group's outcomes twice.
-- Output: problem, n (rows), group_id (the pair or group of one example); one row per kind of
-- problem found.
with
-- @include lib/match_truth.sql
select 'match' as problem, count(*) as n,
       any_value(coalesce(p.pair_id, 'pair number ' || m.pair_no)) as group_id
from matches m
left join pairs p on p.run_id = m.run_id and p.pair_no = m.pair_no
where m.run_id = $run_id
  and not (isfinite(m.x0) and isfinite(m.y0) and isfinite(m.x1) and isfinite(m.y1)
           and not coalesce(isnan(m.score), false))
having count(*) > 0
union all
select 'unpaired', count(*), any_value('pair number ' || m.pair_no)
from matches m
where m.run_id = $run_id
  and not exists (select 1 from pairs p where p.run_id = $run_id and p.pair_no = m.pair_no)
having count(*) > 0
union all
select 'truth', count(*), any_value(pair_id)
from truth t
where t.run_id = $run_id and not coalesce(isfinite(t.gt_x1) and isfinite(t.gt_y1), false)
  and not exists (select 1 from pair_cameras c
                  where c.run_id = $run_id and c.pair_no = t.pair_no)
having count(*) > 0
union all
select 'unpaired_cameras', count(*), any_value('pair number ' || c.pair_no)
from pair_cameras c
where c.run_id = $run_id
  and not exists (select 1 from pairs p where p.run_id = $run_id and p.pair_no = c.pair_no)
having count(*) > 0
union all
select 'unpaired_poses', count(*), any_value('pair number ' || e.pair_no)
from pose_estimates e
where e.run_id = $run_id
  and not exists (select 1 from pair_cameras c
                  where c.run_id = $run_id and c.pair_no = e.pair_no)
having count(*) > 0
union all
select 'match_seq', count(*), any_value(seq)
from (select cast(seq as varchar) as seq from matches where run_id = $run_id
      qualify seq < 0 or count(*) over (partition by seq) > 1)
having count(*) > 0
union all
select 'pair_no', count(*), any_value(pair_id)
from (select pair_id from pairs where run_id = $run_id
      qualify count(*) over (partition by pair_no) > 1)
having count(*) > 0
union all
select 'count', count(*), any_value(group_id)
from outcomes
where run_id = $run_id and (tp < 0 or fp < 0 or fn < 0)
having count(*) > 0
union all
select 'count_big', count(*), any_value(group_id)
from outcomes
where run_id = $run_id and (tp > $max_count or fp > $max_count or fn > $max_count)
having count(*) > 0
union all
select 'count_sum', count(*), any_value(group_id || ': ' || (cast(tp as hugeint) + fp + fn))
from outcomes
where run_id = $run_id and cast(tp as hugeint) + fp + fn > $max_count
having count(*) > 0
union all
select 'outcome_twice', count(*), any_value(group_id)
from (select group_id from outcomes where run_id = $run_id
      qualify count(*) over (partition by group_id) > 1)
having count(*) > 0;

-- name: imported_run_meta
-- The runs row just imported as $run_id INTEGER: experiment, name, params (JSON text), tags.
select experiment, name, cast(params as varchar) as params, tags from runs where run_id = $run_id;

-- name: imported_logged_problems
-- What is wrong with the logged values just imported for the run $run_id INTEGER, as
-- `evalstore log` would have refused it (evalstore/logged.py; a negative step or a
-- (metric, step) twice stops the insert at the table's check and unique index): a value
-- that is NaN or infinite, a metric logged both with and without steps. Output: problem, n
-- (rows), metric, value (of one example); one row per kind of problem found.
select 'value' as problem, count(*) as n, any_value(metric) as metric,
       any_value(cast(value as varchar)) as value
from logged_values
where run_id = $run_id and (isnan(value) or isinf(value))
having count(*) > 0
union all
select 'mixed', sum(n_steps + n_none), any_value(metric),
       any_value(n_steps || ' with a step, ' || n_none || ' without')
from (select metric, count(step) as n_steps, count(*) - count(step) as n_none
      from logged_values
      where run_id = $run_id
      group by metric
      having count(step) > 0 and count(step) < count(*))
having count(*) > 0;

-- name: imported_logged_names
-- The metric names of the logged values just imported for the run $run_id INTEGER.
select distinct metric from logged_values where run_id = $run_id order by metric;

-- name: import_step_links
-- The run_steps rows of the imported run $run_id INTEGER (`_import`: its exported run_steps,
-- step_run_id the step run's id in the export): each step run imported too, mapped from its
-- id in the export ($old_ids INTEGER[]) to its new one ($new_ids INTEGER[], in the same
-- order); a step run not imported leaves its link out.
insert into run_steps (step_run_id, run_id, step)
select m.new_id, $run_id, s.step
from _import s
join (select unnest($old_ids) as old_id, unnest($new_ids) as new_id) m
  on m.old_id = s.step_run_id;
