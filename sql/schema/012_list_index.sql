-- Schema 12: the list index (sql/lib/list_index.sql). Scores never change after ingest, so
-- ingest and import store per list its counts (list_stats) and per retrieved positive the
-- point where it enters the ranking (positive_ranks): `runs` and `show` count rows without
-- scanning them, and average precision under `grouped` ties is an aggregate over
-- positive_ranks instead of a sort of every row. Both are derived rows: exports leave them
-- out, import writes them again, deleting a run deletes them. Existing lists are indexed
-- here.
create table list_stats (
    list_id integer not null,
    n_rows bigint not null,
    n_pos_labels bigint not null,
    n_neg bigint not null,
    n_ret bigint not null,
    p_ret bigint not null,
    n_scores bigint
);
create table positive_ranks (list_id integer not null, tp integer not null, n integer not null);
insert into list_stats
with index_rows as (select list_id, score, label from score_items),
-- @include lib/list_index.sql
select list_id, n_rows, n_pos_labels, n_neg, n_ret, p_ret, n_scores from list_counts;
insert into positive_ranks
with index_rows as (select list_id, score, label from score_items),
-- @include lib/list_index.sql
select list_id, tp, n from positive_points;
