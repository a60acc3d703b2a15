-- ap_voc10: PASCAL VOC 2010+ AP (devkit VOCap.m), the area under the precision envelope:
--   AP = sum_i (R_i - R_{i-1}) * max_{j >= i} P_j, with R_0 = 0 (the sentinels (0, 0) and
--   (1, 0) of VOCap add nothing). P = 0 -> NULL.
-- The areas, doubles in [0, 1] adding up to at most 1, are added by sum_exact: the same bits
-- in any order (docs/metrics.md, "Determinism").
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id, value (one row per list).
with
-- @include lib/ranking_points.sql
,
-- @include lib/envelope.sql
,
areas as (
    select run_id, list_id,
           (rec - lag(rec, 1, 0.0::double) over (partition by list_id order by rn)) * env as a
    from enveloped
),
per_list as (
    select run_id, list_id, sum_exact(a) as s from areas group by run_id, list_id
)
select l.run_id, l.group_id,
       case when l.n_pos = 0 then null else coalesce(p.s, 0.0::double) end as value
from lists l
left join per_list p on p.run_id = l.run_id and p.list_id = l.list_id
