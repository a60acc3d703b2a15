-- The sandbox of evalstore sql and of users' metrics (evalstore/db/sandbox.py).

-- name: config_locked
-- Whether the instance's settings are locked (the instance is already a sandbox).
-- Output: one row, one boolean.
select current_setting('lock_configuration');
