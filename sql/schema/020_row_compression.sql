-- Schema 20: the row tables declare the compression of the two columns whose analysis costs
-- CPU at each checkpoint after an ingest and buys nothing (issue 32, point 2): DuckDB tries
-- every float method (ALP, ALPRD, ...) on a sample of each row group before writing it.
-- Chosen by measurement (python bench/_row_compression.py: DuckDB 2.0.1, 1e7 rows inserted
-- from Parquet and checkpointed into a new file, CPU seconds, medians of 3; docs/benchmarks.md,
-- "Ingest"): 0.78-0.92x schema 19's CPU on seven kinds of data, the same file sizes.
--   score  float32: alp. It writes random N(0,1) scores at the size DuckDB's choice (alprd)
--          does (62.3 MiB the file; the column alone 2 % larger), and scores of 2 decimals,
--          where alp is DuckDB's choice, at 41 MiB instead of 64.5 uncompressed; per 1e7 rows
--          0.05-0.19 s less (0.1 s is this measure's noise). float64: left
--          to DuckDB (alp would make random doubles 14 % larger: alprd keeps the file at 92
--          MiB against 105).
--   gain   alp: a binary run's gains are all NULL (one Constant segment whatever is declared);
--          a graded run's small integers stay as small as DuckDB's choice (alp) makes them
--          (67 MiB, against 143 uncompressed); 0.06-0.21 s less per 1e7 rows.
--   list_id, item, label, seq: left to DuckDB: declaring bitpacking saved no measurable CPU
--          (the integer analysis is cheap), and DuckDB keeps each file its smallest: RLE for
--          list_id when the rows come list by list (bitpacking makes that file 3.5 %
--          larger), bitpacking when they come interleaved (RLE doubles that file: 105.3 MiB
--          against 48.0).
-- DuckDB has no ALTER TABLE ... SET COMPRESSION: each row table is written again (its rows in
-- the same order) and replaces the old one, in the migration's transaction; the views over
-- them (scores, score_items) name them and read the new ones. That costs 1.6 CPU s per 1e7
-- rows (1.57-1.66 for a store of 1e7 int-id float32 rows, 6 s wall at load 9), and the file
-- keeps the old tables' blocks as free space (66 -> 126 MiB there), which later writes reuse.
create table list_rows_int_f32_v20 (
    list_id integer not null, item integer not null, score float using compression alp,
    label tinyint not null, seq integer not null, gain double using compression alp
);
insert into list_rows_int_f32_v20
select list_id, item, score, label, seq, gain from list_rows_int_f32;
drop table list_rows_int_f32;
alter table list_rows_int_f32_v20 rename to list_rows_int_f32;

create table list_rows_int_f64_v20 (
    list_id integer not null, item integer not null, score double,
    label tinyint not null, seq integer not null, gain double using compression alp
);
insert into list_rows_int_f64_v20
select list_id, item, score, label, seq, gain from list_rows_int_f64;
drop table list_rows_int_f64;
alter table list_rows_int_f64_v20 rename to list_rows_int_f64;

create table list_rows_text_f32_v20 (
    list_id integer not null, item varchar not null, score float using compression alp,
    label tinyint not null, seq integer not null, gain double using compression alp
);
insert into list_rows_text_f32_v20
select list_id, item, score, label, seq, gain from list_rows_text_f32;
drop table list_rows_text_f32;
alter table list_rows_text_f32_v20 rename to list_rows_text_f32;

create table list_rows_text_f64_v20 (
    list_id integer not null, item varchar not null, score double,
    label tinyint not null, seq integer not null, gain double using compression alp
);
insert into list_rows_text_f64_v20
select list_id, item, score, label, seq, gain from list_rows_text_f64;
drop table list_rows_text_f64;
alter table list_rows_text_f64_v20 rename to list_rows_text_f64;
