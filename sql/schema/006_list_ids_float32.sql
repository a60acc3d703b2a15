-- Schema 6: an integer key per ranked list, and float32 scores kept as float32.
-- The rows live in `score_rows`; `scores` is a view with the columns of schema 1 plus list_id.
--   list_id: one integer per list, unique across the store (NULL group_id included: the one
--            list of a verification run has its own): each ingest numbers its lists from the
--            largest list_id so far + 1, in order of first appearance. Metric SQL partitions
--            by it alone (one int32 key sorts and hashes faster than run, task and text id).
--   score / score32: a float32 input score is stored in score32 (4 bytes, exact), any other
--            in score (double); the other one is NULL, as both are for "not retrieved".
alter table scores rename to score_rows;
alter table score_rows add column list_id integer;
alter table score_rows add column score32 float;

update score_rows
set list_id = m.list_id
from (
    select run_id, task, group_id,
           dense_rank() over (order by run_id, task, group_id) - 1 as list_id
    from (select distinct run_id, task, group_id from score_rows)
) m
where m.run_id = score_rows.run_id and m.task = score_rows.task
  and m.group_id is not distinct from score_rows.group_id;

create view scores as
select run_id, task, group_id, item_id,
       coalesce(score, cast(score32 as double)) as score,
       label, seq, list_id
from score_rows;

-- groups: one row per list (metadata rows without scores keep list_id NULL), so that metric
-- SQL finds a list's group_id and n_positives override by its list_id.
alter table groups add column list_id integer;

insert into groups (run_id, task, group_id)
select distinct s.run_id, s.task, s.group_id
from score_rows s
where not exists (
    select 1 from groups g
    where g.run_id = s.run_id and g.task = s.task and g.group_id is not distinct from s.group_id
);

update groups
set list_id = m.list_id
from (select distinct run_id, task, group_id, list_id from score_rows) m
where m.run_id = groups.run_id and m.task = groups.task
  and m.group_id is not distinct from groups.group_id;
