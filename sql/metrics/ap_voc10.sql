-- ap_voc10: PASCAL VOC 2010+ AP (devkit VOCap.m), the area under the precision envelope:
--   AP = sum_i (R_i - R_{i-1}) * max_{j >= i} P_j, with R_0 = 0 (the sentinels (0, 0) and
--   (1, 0) of VOCap add nothing). P = 0 -> NULL.
-- The sum is exact (docs/metrics.md, "Determinism"): each area, a double in [0, 1], is scaled by
-- 2^90 and rounded to an integer (exact for areas >= 2^-38), and the integers are added as
-- decimal(38, 0), the same bits in any order of the terms; the sum is at most 2^90 < 10^38.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id, value (one row per list).
with
-- @include lib/ranking_points.sql
,
-- @include lib/envelope.sql
,
areas as (
    select run_id, list_id,
           cast((rec - lag(rec, 1, 0.0::double) over (partition by list_id order by rn)) * env
                * pow(2, 90) as decimal(38, 0)) as a
    from enveloped
),
per_list as (
    select run_id, list_id, sum(a) as s from areas group by run_id, list_id
)
select l.run_id, l.group_id,
       case when l.n_pos = 0 then null
            else coalesce(cast(p.s as double) * pow(2, -90), 0.0::double) end as value
from lists l
left join per_list p on p.run_id = l.run_id and p.list_id = l.list_id
