-- Ingest of ranked lists. Queries over "any row table" name it {rows}: evalstore/ingest puts one of
-- the four list_rows_<item>_<score> tables there (sql/schema/007_lean_rows.sql).

-- name: insert_rows
-- The streaming path: the caller registers the validated batches as `_batch` (list_id,
-- item, score, label, seq, and gain when the inputs have one, typed as {rows}); by name, so
-- that a run without gains stores NULL.
insert into {rows} by name select * from _batch;

-- name: direct_stats
-- What the direct path plans from, for one Parquet file {file} (from its statistics where it
-- has them): rows, non-NULL {group} and {item} ids, the least and greatest {score}, its row
-- groups, and the least and greatest ids ({bound}: the item column, or 0 for text ids).
select count(*), count({group}), count({item}), min({score}), max({score}),
       (select count(distinct row_group_id) from parquet_metadata({file})),
       min({group}), max({group}), min({bound}), max({bound})
from read_parquet({file}, hive_partitioning = false);

-- name: disabled_optimizers
select current_setting('disabled_optimizers');

-- name: set_disabled_optimizers
-- $names: comma-separated optimizer names (global to the database instance).
set disabled_optimizers = $names;

-- name: insert_parquet
-- The direct path: one Parquet file with integer ids into {rows}. {group}, {item}, {score}
-- and {label} are expressions over the file's columns (ingest/direct.py: _direct_sql), {file} its
-- path; direct_check then checks what was stored.
-- $list_offset: list_id = group id + $list_offset; $seq_offset: the file's first input position.
insert into {rows} (list_id, item, score, label, seq)
select cast({group} + $list_offset as integer), {item}, {score}, {label},
       cast(file_row_number + $seq_offset as integer)
from read_parquet({file}, file_row_number = true, hive_partitioning = false);

-- name: direct_check
-- After the direct path's insert of the lists $lo <= list_id < $lo + $lists of {rows}, whose
-- item ids lie in [$imin, $imin + $items): a bitmap with one bit per (list, item) pair
-- (ingest/direct.py counts its marks, fewer than rows meaning a duplicate, and the lists marked),
-- the rows, the rows with a value the streaming path refuses or stores otherwise (a NaN or
-- +inf score, a -inf one that the insert left as it was, a label other than +1/-1/0, an item
-- id outside the planned range, whose bit would be another list's), the rows without a
-- score, and the +1 and -1 labels (the rest are 0 when no row is bad).
select cast(bitstring_agg((list_id - $lo) * $items + (item - $imin), 0,
                          $lists * $items - 1) as blob) as pairs,
       count(*) as n,
       count_if(isnan(score) or score = 'inf' or score = '-inf'
                or label not in (-1, 0, 1)
                or item < $imin or item >= $imin + $items) as bad,
       count(*) - count(score) as not_retrieved,
       count_if(label = 1) as positives,
       count_if(label = -1) as negatives
from {rows}
where list_id >= $lo and list_id < $lo + $lists;

-- name: direct_check_text
-- direct_check for text item ids, after the insert of the lists $lo <= list_id < $lo + $lists:
-- a bitmap with one bit per list (the lists that occur), the rows, the rows with a value
-- the streaming path refuses or stores otherwise (as in direct_check), the rows without a
-- score, and the +1 and -1 labels. Duplicates: direct_pair_hashes.
select cast(bitstring_agg(list_id - $lo, 0, $lists - 1) as blob) as lists,
       count(*) as n,
       count_if(isnan(score) or score = 'inf' or score = '-inf'
                or label not in (-1, 0, 1)) as bad,
       count(*) - count(score) as not_retrieved,
       count_if(label = 1) as positives,
       count_if(label = -1) as negatives
from {rows}
where list_id >= $lo and list_id < $lo + $lists;

-- name: direct_pair_hashes
-- A hash of each (list, item) pair of the lists $lo <= list_id < $lo + $lists of {rows}, in
-- no order: ingest/direct.py sorts them (two equal: maybe a duplicate; a hash aggregate's
-- count(distinct) takes about 5x the CPU).
select hash(list_id, item) as pair from {rows} where list_id >= $lo and list_id < $lo + $lists;

-- name: next_list_id
-- list_id is unique across the store and never reused (metric SQL partitions by it alone):
-- a new ingest numbers its lists from here, then moves it on with set_next_list_id.
select next from list_id_next;

-- name: set_next_list_id
-- $next: the first list id not given yet. A concurrent writer of the same file that moved it
-- too makes this update conflict.
update list_id_next set next = $next;

-- name: first_duplicate
-- The first (group_id, item_id) pair seen twice among the lists $lo <= list_id < $hi of
-- {rows} (one ingest), with the input positions (seq) of its first two occurrences. Zero rows
-- when there is none. Needs the groups rows of those lists (list_id -> group_id).
with rows_ as (
    select list_id, item, seq from {rows} where list_id >= $lo and list_id < $hi
),
counted as (
    select list_id, item, min(seq) as first_seq
    from rows_
    group by list_id, item
    having count(*) > 1
),
first_dup as (
    select c.list_id, cast(c.item as varchar) as item_id, c.first_seq,
           (select min(s.seq) from rows_ s
             where s.list_id = c.list_id and s.item = c.item and s.seq > c.first_seq)
               as second_seq
    from counted c
    order by c.first_seq
    limit 1
)
select g.group_id, f.item_id, f.first_seq, f.second_seq
from first_dup f
join groups g on g.list_id = f.list_id;

-- name: insert_groups
-- $run_id, $task. The registered `_groups_raw` holds group_id varchar, list_id integer,
-- n_positives integer, keys varchar[], values varchar[] (the slices, NULL: none): one row per
-- list of the run's task, and one per metadata row without scores.
insert into groups (run_id, task, group_id, list_id, n_positives, slices)
select $run_id, $task, group_id, list_id, n_positives,
       map(coalesce(keys, []::varchar[]), coalesce(values, []::varchar[]))
from _groups_raw;

-- name: run_has_task
select count(*) as n from groups where run_id = $run_id and task = $task and list_id is not null;

-- name: n_positives_below_labels
-- A list whose n_positives override is below its count of +1 labels (recall would pass 1).
select g.group_id, g.n_positives, count(*) as positives
from groups g
join score_items s on s.list_id = g.list_id
where g.run_id = $run_id and g.task = $task and g.n_positives is not null and s.label = 1
group by g.group_id, g.n_positives
having count(*) > g.n_positives
order by g.group_id
limit 1;

-- Expressions of the direct path's insert over the file's quoted columns {score} and
-- {label}: -inf as NULL (not retrieved), a negated score, and labels of the 0/1 and boolean
-- conventions turned into +1/-1 (any other value stops the insert with the recheck error).
-- name: score_negated
(-{score})

-- name: score_not_retrieved
case when {score} = '-inf' then null else {score} end

-- name: label_pm1
{label}

-- name: label_01
case {label} when 1 then 1 when 0 then -1 else error('evalstore-recheck') end

-- name: label_bool
case when {label} then 1 when not {label} then -1 else error('evalstore-recheck') end

-- name: n_positives_unlisted
-- $run_id, $task: the positives the lists' n_positives overrides add beyond their +1 labels,
-- in all (NULL: no override), and the list that adds the most with its count. nDCG's ideal
-- ranking holds one row per such positive (sql/lib/dcg.sql).
select sum(g.n_positives - c.n_pos_labels) as added,
       arg_max(g.group_id, g.n_positives - c.n_pos_labels) as group_id,
       max(g.n_positives - c.n_pos_labels) as most
from groups g
join list_stats c on c.list_id = g.list_id
where g.run_id = $run_id and g.task = $task and g.n_positives is not null;
