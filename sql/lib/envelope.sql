-- The precision envelope env_i = max_{j >= i} P_j of each list (VOC / COCO interpolation).
-- Needs the `curve` CTE of lib/ranking_points.sql. Defines enveloped(curve columns, env).
enveloped as (
    select c.*,
           max(c.prec) over (
               partition by c.list_id
               order by c.rn
               rows between current row and unbounded following
           ) as env
    from curve c
)
