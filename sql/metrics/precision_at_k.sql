-- precision_at_k: TP_k / k over the top k ranked non-ignored items; ranks past the end of the
-- list count as misses (trec_eval). Ties as in lib/tp_at_k.sql. P = 0 -> NULL.
-- Parameters: $runs integer[], $task varchar, $ties varchar, $k integer >= 1.
-- Output: run_id, group_id, value (one row per list).
with
-- @include lib/ranking_points.sql
,
-- @include lib/tp_at_k.sql k=$k
select run_id, group_id,
       case when n_pos = 0 then null else tp_k / nullif(cast($k as double), 0) end as value
from at_k
