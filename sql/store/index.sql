-- The list index of sql/lib/list_index.sql: list_stats and positive_ranks rows, written by
-- ingest and import for the lists $lo <= list_id < $hi of one row table ({rows}), deleted
-- with their run.

-- name: insert_list_stats
insert into list_stats
with index_rows as (
    select list_id, score, label from {rows} where list_id >= $lo and list_id < $hi
),
-- @include lib/list_index.sql
select list_id, n_rows, n_pos_labels, n_neg, n_ret, p_ret, n_scores from list_counts;

-- name: insert_positive_ranks
-- The SQL way (scores stored as DOUBLE; float32 scores take the NumPy way).
insert into positive_ranks
with index_rows as (
    select list_id, score, label from {rows} where list_id >= $lo and list_id < $hi
),
-- @include lib/list_index.sql
select list_id, tp, n from positive_points;

-- name: index_chunks
-- The lists $lo <= list_id < $hi cut into ranges of at most $rows retrieved non-ignored rows
-- (a list longer than that is a range of its own): first and end list id of each, and its rows.
with sized as (
    select list_id, sum(n_ret) over (order by list_id) as upto, n_ret
    from list_stats
    where list_id >= $lo and list_id < $hi
),
cut as (
    select list_id, n_ret, cast(floor((upto - n_ret) / $rows) as bigint) as chunk from sized
)
select min(list_id) as first, max(list_id) + 1 as stop, sum(n_ret) as n_ret
from cut
group by chunk
order by first;

-- name: set_n_scores
-- The distinct scores of the lists evalstore/ingest/index.py ranked, registered as
-- `_list_scores` (list_id, n_scores).
update list_stats set n_scores = t.n_scores
from _list_scores t
where list_stats.list_id = t.list_id;

-- name: index_rows
-- The retrieved, non-ignored rows of the lists $lo <= list_id < $hi of {rows}, for NumPy.
select list_id, score, label
from {rows}
where list_id >= $lo and list_id < $hi and label <> 0 and score is not null;

-- name: insert_positive_ranks_from
-- The rows evalstore/ingest/index.py computed, registered as `_positive_ranks`.
insert into positive_ranks select list_id, tp, n from _positive_ranks;

-- name: list_stats_view
-- list_stats of every list of score_items: what an engine without the stored index (Spark
-- over an export) computes instead.
with index_rows as (select list_id, score, label from score_items),
-- @include lib/list_index.sql
select list_id, n_rows, n_pos_labels, n_neg, n_ret, p_ret, n_scores from list_counts;

-- name: positive_ranks_view
-- positive_ranks of every list of score_items, as list_stats_view.
with index_rows as (select list_id, score, label from score_items),
-- @include lib/list_index.sql
select list_id, tp, n from positive_points;

-- name: delete_index_stats
-- Before the run's groups rows go.
delete from list_stats
where list_id in (select list_id from groups where run_id = $run_id and list_id is not null);

-- name: delete_index_ranks
delete from positive_ranks
where list_id in (select list_id from groups where run_id = $run_id and list_id is not null);
