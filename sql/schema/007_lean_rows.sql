-- Schema 7: the ranked items of a list in one of four lean tables, with only what varies per row.
--   list_rows_<item>_<score> (list_id, item, score, label, seq):
--       <item>  int:  item ids given as integers of int32 range, stored as INTEGER;
--               text: any other item id, stored as VARCHAR;
--       <score> f32:  float32 input scores, stored as FLOAT (exact);
--               f64:  any other score, stored as DOUBLE.
--   An ingest writes all its rows to one of them. A list's run and task are in its groups row
--   (list_id is unique across the store), so the rows carry neither, nor a column left NULL
--   for the other kind of id or score: every stored column costs insert time and space.
--   seq is the input position within the run's task (0, 1, 2, ...), at most 2^31 - 1.
--   `scores` (the columns and types of schema 6) and `score_items` (what metric SQL reads)
--   are views over the four tables and `groups`.
-- seq becomes an INTEGER: a store with a task of a run of 2^31 rows or more stays at schema 6
select case when max(seq) > 2147483647
            then error('a task of a run holds more than 2,147,483,647 rows; schema 7 stores '
                       || 'at most that many: keep this store with an evalstore of schema 6')
       end
from score_rows;

create table list_rows_int_f32 (
    list_id integer not null, item integer not null, score float,
    label tinyint not null, seq integer not null
);
create table list_rows_int_f64 (
    list_id integer not null, item integer not null, score double,
    label tinyint not null, seq integer not null
);
create table list_rows_text_f32 (
    list_id integer not null, item varchar not null, score float,
    label tinyint not null, seq integer not null
);
create table list_rows_text_f64 (
    list_id integer not null, item varchar not null, score double,
    label tinyint not null, seq integer not null
);

-- each list of schema 6 moves whole: to an int table when all its item ids are int32
-- integers, to an f32 table when its scores were stored as float32 (none as double)
create temp table _list_kind as
select list_id,
       bool_and(item_num is not null
                and item_num between -2147483648 and 2147483647) as int_items,
       count(score) = 0 and count(score32) > 0 as f32
from score_rows
group by list_id;

insert into list_rows_int_f32
select s.list_id, cast(s.item_num as integer), s.score32, s.label, cast(s.seq as integer)
from score_rows s join _list_kind k using (list_id)
where k.int_items and k.f32;

insert into list_rows_int_f64
select s.list_id, cast(s.item_num as integer), coalesce(s.score, s.score32), s.label,
       cast(s.seq as integer)
from score_rows s join _list_kind k using (list_id)
where k.int_items and not k.f32;

insert into list_rows_text_f32
select s.list_id, coalesce(s.item_key, cast(s.item_num as varchar)), s.score32, s.label,
       cast(s.seq as integer)
from score_rows s join _list_kind k using (list_id)
where not k.int_items and k.f32;

insert into list_rows_text_f64
select s.list_id, coalesce(s.item_key, cast(s.item_num as varchar)),
       coalesce(s.score, s.score32), s.label, cast(s.seq as integer)
from score_rows s join _list_kind k using (list_id)
where not k.int_items and not k.f32;

drop table _list_kind;
drop view scores;
drop view score_items;
drop table score_rows;

create view score_items as
select g.run_id, g.task, r.list_id, r.score, r.label, r.seq
from (
    select list_id, cast(score as double) as score, label, seq from list_rows_int_f32
    union all
    select list_id, score, label, seq from list_rows_int_f64
    union all
    select list_id, cast(score as double) as score, label, seq from list_rows_text_f32
    union all
    select list_id, score, label, seq from list_rows_text_f64
) r
join groups g on g.list_id = r.list_id;

create view scores as
select g.run_id, g.task, g.group_id, r.item_id, r.score, r.label, cast(r.seq as bigint) as seq,
       r.list_id
from (
    select list_id, cast(item as varchar) as item_id, cast(score as double) as score, label, seq
    from list_rows_int_f32
    union all
    select list_id, cast(item as varchar) as item_id, score, label, seq from list_rows_int_f64
    union all
    select list_id, item as item_id, cast(score as double) as score, label, seq
    from list_rows_text_f32
    union all
    select list_id, item as item_id, score, label, seq from list_rows_text_f64
) r
join groups g on g.list_id = r.list_id;
