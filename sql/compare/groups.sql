-- Configurations: runs of one experiment whose params are equal except for the seed
-- (evalstore.analysis.configurations). The SQL is in two fragments, shared with the view
-- v_groups (sql/store/views.sql, which sets the seed parameter 'seed' and groups on every
-- other parameter): lib/configurations.sql and lib/configuration_stats.sql.
-- Parameters of both queries: $seed varchar, the seed parameter's name; $keys varchar[],
-- NULL (group on every parameter but the seed) or the parameters to group on.

-- name: configs
-- Each run's configuration.
-- Output: run_id, experiment, run, name, created_at, config, seed, config_key.
-- @include lib/configurations.sql seed=$seed keys=$keys

-- name: groups
-- Per configuration and stored overall value: n_runs, mean, sd, the 95% Student t interval
-- of the mean across runs, min, max, runs and seeds by seed.
-- Output: experiment, config, task, metric, base_metric, params, n_runs, n_values, mean, sd,
-- ci_low, ci_high, min, max, runs, run_ids, seeds, first_created, last_created.
with configs as (
-- @include lib/configurations.sql seed=$seed keys=$keys
),
-- @include lib/configuration_stats.sql
