-- Ingest of ranked lists. The caller registers the validated batch as the view `_batch`
-- (columns group_id varchar, item_id varchar, list_id integer, score double, score32 float,
-- label tinyint, seq bigint; one of score and score32 is NULL).

-- name: insert_scores
-- $run_id: integer; $task: task_kind.
insert into score_rows (run_id, task, group_id, item_id, list_id, score, score32, label, seq)
select $run_id, $task, group_id, item_id, list_id, score, score32, label, seq
from _batch;

-- name: next_list_id
-- list_id is unique across the store (metric SQL partitions by it alone): a new ingest
-- numbers its lists from here.
select coalesce(max(list_id), -1) + 1 as first from score_rows;

-- name: first_duplicate
-- The first (group_id, item_id) pair seen twice in $run_id / $task, with the input positions
-- (seq) of its first two occurrences. Zero rows when there is none.
with counted as (
    select group_id, item_id, count(*) as n, min(seq) as first_seq
    from scores
    where run_id = $run_id and task = $task
    group by group_id, item_id
    having count(*) > 1
)
select c.group_id, c.item_id, c.first_seq,
       (select min(s.seq) from scores s
         where s.run_id = $run_id and s.task = $task
           and s.group_id is not distinct from c.group_id and s.item_id = c.item_id
           and s.seq > c.first_seq) as second_seq
from counted c
order by c.first_seq
limit 1;

-- name: insert_groups
-- $run_id, $task. `_groups` holds group_id varchar, list_id integer, n_positives integer,
-- slices map: one row per list of the run's task, and one per metadata row without scores.
insert into groups (run_id, task, group_id, list_id, n_positives, slices)
select $run_id, $task, group_id, list_id, n_positives, slices
from _groups;

-- name: run_has_task
select count(*) as n from scores where run_id = $run_id and task = $task;

-- name: stage_groups
-- Turn the registered `_groups_raw` (group_id, list_id, n_positives, keys[], values[]) into
-- `_groups`.
create or replace temp view _groups as
select group_id, list_id, n_positives,
       map(coalesce(keys, []::varchar[]), coalesce(values, []::varchar[])) as slices
from _groups_raw;

-- name: count_lists
select count(distinct coalesce(group_id, '')) as n
from scores
where run_id = $run_id and task = $task;

-- name: n_positives_below_labels
-- A list whose n_positives override is below its count of +1 labels (recall would pass 1).
select g.group_id, g.n_positives, count(*) as positives
from groups g
join scores s
  on s.run_id = g.run_id and s.task = g.task and s.group_id is not distinct from g.group_id
where g.run_id = $run_id and g.task = $task and g.n_positives is not null and s.label = 1
group by g.group_id, g.n_positives
having count(*) > g.n_positives
order by g.group_id
limit 1;
