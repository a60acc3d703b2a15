-- ndcg: normalised discounted cumulative gain over the whole ranked list, with linear gain (the
-- relevance grade: trec_eval ndcg): DCG / IDCG, DCG = sum gain_i / log2(rank_i + 1) over the
-- retrieved items, IDCG the same for the list's judged items in decreasing order of gain. A NULL
-- gain is 1 for a +1 label, 0 else. Ties: under `grouped` the expected DCG over a random order
-- within each tie, else the policy's order (lib/dcg.sql). IDCG = 0 (no positive gain) -> NULL.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id, value (one row per list).
with
cutoff as (
    select cast(2147483647 as bigint) as k  -- no cut-off: past every rank
),
-- @include lib/dcg.sql gain=gain gain_sum=g
select run_id, group_id, value from ndcg
