-- Ingest of ranked lists. The caller registers the validated batch as the view `_batch`
-- (columns list_id integer, item_num bigint, item_key varchar, score double, score32 float,
-- label tinyint, seq bigint; one of item_num and item_key is NULL, and one of score and
-- score32).

-- name: insert_scores
-- $run_id: integer; $task: task_kind.
insert into score_rows (run_id, task, list_id, item_num, item_key, score, score32, label, seq)
select $run_id, $task, list_id, item_num, item_key, score, score32, label, seq
from _batch;

-- name: next_list_id
-- list_id is unique across the store and never reused (metric SQL partitions by it alone):
-- a new ingest numbers its lists from here, then moves it on with set_next_list_id.
select next from list_id_next;

-- name: set_next_list_id
-- $next: the first list id not given yet. A concurrent writer of the same file that moved it
-- too makes this update conflict.
update list_id_next set next = $next;

-- name: first_duplicate
-- The first (group_id, item_id) pair seen twice in $run_id / $task, with the input positions
-- (seq) of its first two occurrences. Zero rows when there is none. Needs the run's groups
-- rows (list_id -> group_id).
with counted as (
    select list_id, item_num, item_key, count(*) as n, min(seq) as first_seq
    from score_rows
    where run_id = $run_id and task = $task
    group by list_id, item_num, item_key
    having count(*) > 1
),
first_dup as (
    select c.list_id, coalesce(c.item_key, cast(c.item_num as varchar)) as item_id, c.first_seq,
           (select min(s.seq) from score_rows s
             where s.run_id = $run_id and s.task = $task and s.list_id = c.list_id
               and s.item_num is not distinct from c.item_num
               and s.item_key is not distinct from c.item_key
               and s.seq > c.first_seq) as second_seq
    from counted c
    order by c.first_seq
    limit 1
)
select g.group_id, f.item_id, f.first_seq, f.second_seq
from first_dup f
join groups g on g.list_id = f.list_id;

-- name: insert_groups
-- $run_id, $task. `_groups` holds group_id varchar, list_id integer, n_positives integer,
-- slices map: one row per list of the run's task, and one per metadata row without scores.
insert into groups (run_id, task, group_id, list_id, n_positives, slices)
select $run_id, $task, group_id, list_id, n_positives, slices
from _groups;

-- name: run_has_task
select count(*) as n from score_rows where run_id = $run_id and task = $task;

-- name: stage_groups
-- Turn the registered `_groups_raw` (group_id, list_id, n_positives, keys[], values[]) into
-- `_groups`.
create or replace temp view _groups as
select group_id, list_id, n_positives,
       map(coalesce(keys, []::varchar[]), coalesce(values, []::varchar[])) as slices
from _groups_raw;

-- name: n_positives_below_labels
-- A list whose n_positives override is below its count of +1 labels (recall would pass 1).
select g.group_id, g.n_positives, count(*) as positives
from groups g
join score_rows s on s.list_id = g.list_id
where g.run_id = $run_id and g.task = $task and g.n_positives is not null and s.label = 1
group by g.group_id, g.n_positives
having count(*) > g.n_positives
order by g.group_id
limit 1;
