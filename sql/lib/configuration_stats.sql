-- Per configuration and stored overall value (task, metric, params; slice ''): how many runs
-- it has, the mean of their values, the standard deviation across runs, the 95% Student t
-- interval of the mean across runs (mean -/+ t(0.975, n - 1) sd / sqrt(n); NULL for one run),
-- min, max, and the runs and seeds by seed. Runs without a value (a list set without
-- positives) count in n_runs, not in the statistics (n_values).
-- Reads the CTE configs (lib/configurations.sql) the including query defines before it; the
-- fragment is the CTEs after it and the final select.
-- Output: experiment, config, task, metric, base_metric, params, n_runs, n_values, mean, sd,
-- ci_low, ci_high, min, max, runs, run_ids, seeds, first_created, last_created.
stats as (
    select c.experiment, c.config, cast(m.task as varchar) as task, m.label as metric,
           m.metric as base_metric, m.params,
           count(*) as n_runs,
           count(m.value) as n_values,
           avg(m.value) as mean,
           stddev_samp(m.value) as sd,
           min(m.value) as min,
           max(m.value) as max,
           list(c.run order by try_cast(c.seed as double), c.seed, c.run) as runs,
           list(c.run_id order by try_cast(c.seed as double), c.seed, c.run) as run_ids,
           list(c.seed order by try_cast(c.seed as double), c.seed, c.run) as seeds,
           min(c.created_at) as first_created,
           max(c.created_at) as last_created
    from metric_values m
    join configs c on c.run_id = m.run_id
    where m.slice = ''
    group by c.experiment, c.config_key, c.config, m.task, m.label, m.metric, m.params
),
quantile as (
    -- t(0.975, n - 1) of the configuration's values
    select s.*,
-- @include lib/t975.sql table=t.q975 df=s.n_values-1
    from stats s
    left join student_t t on t.df = s.n_values - 1
)
select experiment, config, task, metric, base_metric, params, n_runs, n_values, mean, sd,
       case when n_values > 1 then mean - q * sd / sqrt(n_values) end as ci_low,
       case when n_values > 1 then mean + q * sd / sqrt(n_values) end as ci_high,
       min, max, runs, run_ids, seeds, first_created, last_created
from quantile
