-- ndcg_at_k: ndcg at cut-off k: DCG over the top k ranks, IDCG over the first k of the ideal order
-- (trec_eval ndcg_cut_k). A NULL gain is 1 for a +1 label, 0 else. Ties: under `grouped` the
-- expected DCG@k over a random order within each tie (a tie cut by k gives each of its items the
-- mean of its discounts within the top k), else the policy's order (lib/dcg.sql). IDCG = 0 (no
-- positive gain) -> NULL.
-- Parameters: $runs integer[], $task varchar, $ties varchar, $k integer >= 1.
-- Output: run_id, group_id, value (one row per list).
with
cutoff as (
    select cast($k as bigint) as k
),
-- @include lib/dcg.sql gain=gain gain_sum=g
select run_id, group_id, value from ndcg
