-- Schema 19: the per-rank index (sql/lib/tied_ranks.sql). Per retrieved positive of a
-- densely tied list (list_stats: n_scores < n_ret and 2 * n_scores <= n_ret), the rank of the
-- list's k-th positive under each per-rank tie policy (optimistic, pessimistic, input,
-- docid), so that ap under those policies is an aggregate instead of a sort of the rows at
-- each evaluation. Any other list has no row (without tied scores every policy ranks it as
-- `grouped` does: positive_ranks; a few ties: ap_ranked sorts its tie groups). Derived rows,
-- as the list index of schema 12: ingest and import write them
-- (evalstore/ingest/rank_index.py), exports leave them out, deleting a run deletes them.
-- Existing lists are indexed here, by the same rule.
create table tied_ranks (
    list_id integer not null,
    k integer not null,
    n_optimistic integer not null,
    n_pessimistic integer not null,
    n_input integer not null,
    n_docid integer not null
);
insert into tied_ranks
with
-- @include lib/tied_ranks.sql
select list_id, k, n_optimistic, n_pessimistic, n_input, n_docid from tied_points;
