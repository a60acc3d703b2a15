-- Ingest of ranked lists. The caller registers the validated batch as the view `_batch`
-- (columns group_id varchar, item_id varchar, score double, label tinyint, seq bigint).

-- name: insert_scores
-- $run_id: integer; $task: task_kind.
insert into scores (run_id, task, group_id, item_id, score, label, seq)
select $run_id, $task, group_id, item_id, score, label, seq
from _batch;

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
-- $run_id, $task. `_groups` holds group_id varchar, n_positives integer, slices map.
insert into groups (run_id, task, group_id, n_positives, slices)
select $run_id, $task, group_id, n_positives, slices
from _groups;

-- name: run_has_task
select count(*) as n from scores where run_id = $run_id and task = $task;

-- name: stage_groups
-- Turn the registered `_groups_raw` (group_id, n_positives, keys[], values[]) into `_groups`.
create or replace temp view _groups as
select group_id, n_positives, map(keys, values) as slices
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
