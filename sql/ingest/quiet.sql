-- The private connection of a file reader prints nothing: DuckDB's progress bar (shown for a
-- query running over 2 s, on standard output) is off. The library never prints.
-- No parameters; no output.
set enable_progress_bar = false
