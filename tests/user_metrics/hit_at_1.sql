-- metric: hit_at_1
-- tasks: retrieval, matching
-- direction: higher
-- Whether the top-ranked item of a list is a positive: 1 or 0 (under grouped ties, the
-- fraction of positives among the items tied at the top). NULL for a list without positives.
with
-- @include lib/ranking_points.sql
,
top as (
    select run_id, list_id,
           cast(d_tp as double) / nullif(cast(d_tp + d_fp as double), 0) as hit
    from curve
    where rn = 1
)
select l.run_id, l.group_id,
       case when l.n_pos = 0 then null else coalesce(t.hit, 0.0::double) end as value
from lists l
left join top t on t.run_id = l.run_id and t.list_id = l.list_id
