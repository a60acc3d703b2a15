-- Schema 15: leaner keypoint matches (docs/benchmarks.md, "Keypoint ingest": two columns and
-- a string a match fewer to write, 2.5 + 1.1 CPU s at 2e7 matches).
--   gt_x1, gt_y1: the truth given with a match or derived from a disparity; NULL where the
--     pair's homography (pairs.h11..h33) gives it, which the metrics apply when they read the
--     match (sql/lib/match_truth.sql, the floats of geometry.transfer). Rows stored before
--     keep their values.
--   pair_no: a match names its pair by the pair's number within its run (pairs.pair_no, 0, 1,
--     ...), an INTEGER, not by its text id: pairs.pair_id keeps the id. Numbered here in the
--     order of the ids; ingest numbers a run's pairs in the order it reads them.
--   seq: the input order within the run, an INTEGER, as the ranked rows' seq is
--     (evalstore.ingest.validate.MAX_ROWS).
-- The matches table is rebuilt (DuckDB alters no column of a table updated in the same
-- transaction). v_matches: every match with its pair's id and its truth resolved, as the
-- metrics see it.
alter table pairs add column pair_no integer;
update pairs set pair_no = n.pair_no
from (
    select run_id, pair_id,
           cast(row_number() over (partition by run_id order by pair_id) - 1 as integer) as pair_no
    from pairs
) n
where pairs.run_id = n.run_id and pairs.pair_id = n.pair_id;

create table matches_15 (
    run_id   integer not null,
    pair_no  integer not null,
    x0       double not null,
    y0       double not null,
    x1       double not null,
    y1       double not null,
    score    double,
    gt_x1    double,
    gt_y1    double,
    seq      integer not null
);
insert into matches_15
select m.run_id, p.pair_no, m.x0, m.y0, m.x1, m.y1, m.score, m.gt_x1, m.gt_y1, m.seq
from matches m
join pairs p on p.run_id = m.run_id and p.pair_id = m.pair_id
order by m.run_id, m.seq;
drop table matches;
alter table matches_15 rename to matches;

create view v_matches as
with
-- @include lib/match_truth.sql
select run_id, pair_id, x0, y0, x1, y1, score, gt_x1, gt_y1, seq
from truth;
