-- r_precision: precision at rank R = P, the list's number of positives: TP_P / P
-- (trec_eval Rprec); ranks past the end of the list count as misses. Ties as in
-- lib/tp_at_k.sql (a tie group cut at rank P gives its positives in proportion). P = 0 ->
-- NULL.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id, value (one row per list).
with
-- @include lib/ranking_points.sql
,
-- @include lib/tp_at_k.sql k=l.n_pos
select run_id, group_id,
       case when n_pos = 0 then null else tp_k / nullif(cast(n_pos as double), 0) end as value
from at_k
