-- Schema 6: integer keys for lists and items, float32 scores kept as float32.
-- The ranked items live in `score_rows`; `scores` is a view with the columns of schema 1 plus
-- list_id, and `score_items` the lean view that metric SQL reads.
--   list_id:  one integer per list, unique across the store (a NULL group_id included: the
--             one list of a verification run has its own) and never reused (a list of a
--             deleted run may live on in an export): each ingest numbers its lists from
--             list_id_next.next, in order of first appearance, and moves it on; two writers
--             of one file at once conflict on that row, so one of them fails. groups has a row
--             per list with its group_id (the text the user gave), its n_positives override
--             and slices; metadata rows without scores keep list_id NULL. Metric SQL
--             partitions by list_id alone (one int32 key sorts and hashes faster than run,
--             task and a text id).
--   item_num / item_key: an item id given as an integer is stored in item_num, any other as
--             text in item_key; the other one is NULL. The views show it as text.
--   score / score32: a float32 input score is stored in score32 (4 bytes, exact), any other in
--             score (double); the other one is NULL, as both are for "not retrieved".
alter table scores rename to score_rows;
alter table score_rows add column list_id integer;
alter table score_rows add column score32 float;
alter table score_rows add column item_num bigint;
alter table score_rows rename column item_id to item_key;
alter table score_rows alter column item_key drop not null;

update score_rows
set list_id = m.list_id
from (
    select run_id, task, group_id,
           cast(dense_rank() over (order by run_id, task, group_id) - 1 as integer) as list_id
    from (select distinct run_id, task, group_id from score_rows)
) m
where m.run_id = score_rows.run_id and m.task = score_rows.task
  and m.group_id is not distinct from score_rows.group_id;

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

alter table score_rows drop column group_id;

create table list_id_next (next integer not null);
insert into list_id_next select coalesce(max(list_id), -1) + 1 from score_rows;

create view score_items as
select run_id, task, list_id, coalesce(score, cast(score32 as double)) as score, label, seq
from score_rows;

create view scores as
select s.run_id, s.task, g.group_id,
       coalesce(s.item_key, cast(s.item_num as varchar)) as item_id,
       coalesce(s.score, cast(s.score32 as double)) as score,
       s.label, s.seq, s.list_id
from score_rows s
join groups g on g.list_id = s.list_id;
