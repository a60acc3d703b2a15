-- ece: expected calibration error, L1, over $bins equal-width bins of the confidence (the
-- top-1 score, read as a probability in [0, 1]: evaluate refuses another) against the
-- accuracy (1 where the top-1 class is the true one; under grouped its probability):
-- sum over bins of |acc_bin - conf_bin| * n_bin / n, acc_bin and conf_bin the means of the
-- bin's samples. As torchmetrics' calibration_error (functional/classification/
-- calibration_error.py, _binning_bucketize and _ce_compute): the edges are
-- linspace(0, 1, B + 1), edge i = i * (1 / B) and the last 1.0; a confidence c goes to bin
-- (the edges <= c) - 1 (bucketize(right=True) - 1, searchsorted side='right' - 1), so a
-- confidence on an edge opens the bin above it and a confidence of exactly 1.0 is a bin of
-- its own (B + 1 bins in all). floor(c * B) is at most one bin from it; the edges correct it.
-- Single-label runs (lib/single_label.sql). One row per run and bin count (group_id NULL).
-- Parameters: $runs integer[], $task varchar, $ties varchar, $bins double[] (whole numbers
-- >= 1, default 15).
-- Output: run_id, group_id (NULL), bins, value.
with
-- @include lib/single_label.sql k=1
,
sweep as (
    select unnest($bins) as bins
),
guessed as (
    select h.run_id, s.bins, h.conf, h.hit,
           least(greatest(floor(h.conf * s.bins), 0.0::double), s.bins) as j
    from hits h
    cross join sweep s
),
edges as (
    -- the edges at j and j + 1: i * (1 / B) below B and 1.0 at B (numpy.linspace's values)
    select run_id, bins, conf, hit, j,
           case when j >= bins then 1.0::double
                else j * (1.0::double / nullif(bins, 0)) end as lo,
           case when j + 1 >= bins then 1.0::double
                else (j + 1) * (1.0::double / nullif(bins, 0)) end as hi
    from guessed
),
binned as (
    select run_id, bins, conf, hit,
           case when lo > conf then j - 1
                when j + 1 <= bins and hi <= conf then j + 1
                else j end as bin
    from edges
),
per_bin as (
    select run_id, bins, bin, count(*) as n,
           sum_exact(conf) / nullif(cast(count(*) as double), 0) as conf_bin,
           sum_exact(hit) / nullif(cast(count(*) as double), 0) as acc_bin
    from binned
    group by run_id, bins, bin
),
totals as (
    select run_id, bins, sum(n) as total from per_bin group by run_id, bins
)
select b.run_id, cast(null as varchar) as group_id, b.bins,
       sum_exact(abs(b.acc_bin - b.conf_bin) * (b.n / nullif(cast(t.total as double), 0)))
           as value
from per_bin b
join totals t on t.run_id = b.run_id and t.bins = b.bins
group by b.run_id, b.bins
