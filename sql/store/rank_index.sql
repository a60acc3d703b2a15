-- The per-rank index (sql/schema/019_tied_ranks.sql): per retrieved positive of a densely
-- tied list, where the k-th positive of the list stands under each per-rank tie policy.
-- evalstore/ingest/rank_index.py writes it with NumPy sorts; tied_ranks_view is its
-- definition in SQL (what Spark computes from the rows, and what the migration wrote for
-- the lists stored before it). tests/test_rank_index.py checks that both give the same rows.

-- name: indexed_lists
-- The lists $lo <= list_id < $hi with retrieved, non-ignored rows, and whether each is
-- indexed: densely tied by what its list_stats row holds (the rule of lib/tied_ranks.sql),
-- and its retrieved, non-ignored rows.
select list_id, coalesce(n_scores < n_ret and 2 * n_scores <= n_ret, false) as indexed, n_ret
from list_stats
where list_id >= $lo and list_id < $hi and n_ret > 0
order by list_id;

-- name: tied_rows
-- The retrieved, non-ignored rows of the lists $lo <= list_id < $hi of {rows} (every list
-- of the range that has such rows is indexed), for NumPy.
select list_id, score, label, seq, item
from {rows}
where list_id >= $lo and list_id < $hi and label <> 0 and score is not null;

-- name: tied_rows_of
-- As tied_rows, for the lists of the range registered as `_tied_lists` (list_id) alone.
select list_id, score, label, seq, item
from {rows}
where list_id >= $lo and list_id < $hi and label <> 0 and score is not null
  and list_id in (select list_id from _tied_lists);

-- name: insert_tied_ranks_from
-- The rows evalstore/ingest/rank_index.py computed, registered as `_tied_ranks`.
insert into tied_ranks by name
select list_id, k, n_optimistic, n_pessimistic, n_input, n_docid from _tied_ranks;

-- name: tied_ranks_view
-- tied_ranks of every list of `scores` (sql/lib/tied_ranks.sql): what Spark computes from the
-- rows instead of the stored index.
with
-- @include lib/tied_ranks.sql
select list_id, k, n_optimistic, n_pessimistic, n_input, n_docid from tied_points;

-- name: merge_tied_ranks
insert into tied_ranks by name
select * replace (list_id + $offset as list_id)
from __evalstore_stage.tied_ranks;

-- name: delete_run_tied_ranks
-- The run's lists (its groups rows, whether or not they went already: rows of lists that
-- no groups row names are the deleted run's).
delete from tied_ranks
where list_id in (select list_id from groups where run_id = $run_id and list_id is not null)
   or list_id not in (select list_id from groups where list_id is not null);
