-- Configurations: runs of one experiment whose params are equal except for the seed
-- (evalstore.analysis.configurations). The SQL is in two fragments, shared with the view
-- v_groups (sql/store/views.sql, which sets the seed parameter 'seed' and groups on every
-- other parameter): lib/configurations.sql and lib/configuration_stats.sql.
-- Parameters of both queries: $seed varchar, the seed parameter's name; $keys varchar[],
-- NULL (group on every parameter but the seed) or the parameters to group on.
-- Step runs (run_steps: a run's evaluation at a training step, with its run's params) are
-- left out: they are not seeds of their run's configuration. (v_groups keeps them.)

-- name: configs
-- Each run's configuration.
-- Output: run_id, experiment, run, name, created_at, config, seed, config_key.
select c.*
from (
-- @include lib/configurations.sql seed=$seed keys=$keys
) c
where c.run_id not in (select step_run_id from run_steps);

-- name: groups
-- Per configuration and stored overall value: n_runs, mean, sd, the 95% Student t interval
-- of the mean across runs, min, max, runs and seeds by seed.
-- Output: experiment, config, task, metric, base_metric, params, n_runs, n_values, mean, sd,
-- ci_low, ci_high, min, max, runs, run_ids, seeds, first_created, last_created.
with configs as (
    select c.*
    from (
-- @include lib/configurations.sql seed=$seed keys=$keys
    ) c
    where c.run_id not in (select step_run_id from run_steps)
),
-- @include lib/configuration_stats.sql
