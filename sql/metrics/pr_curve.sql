-- pr_curve: the (recall, precision) points of each list, in ranking order, for plots.
-- Parameters: $runs integer[], $task varchar, $ties varchar.
-- Output: run_id, group_id, rn, recall, precision (one row per point).
with
-- @include lib/ranking_points.sql
select run_id, group_id, rn, rec as recall, prec as precision
from curve
where n_pos > 0
order by run_id, group_id, rn
