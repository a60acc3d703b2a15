-- Per image pair and per {sweep} in ${sweep}s: the fraction of the pair's matches whose
-- distance d = sqrt((x1 - gt_x1)^2 + (y1 - gt_y1)^2) to its ground-truth position (lib/match_truth.sql) satisfies
-- d {cmp} {sweep}. Every pair of the run counts; a pair without matches scores 0.
-- One pass over the matches: the distinct thresholds t_1 < ... < t_S cut the distances into
-- S + 1 bins (below t_1, between t_b and t_(b+1), from t_S on, each bin open or closed at its
-- ends as {cmp} needs), so no bin straddles a threshold; a pair's hits at t are its matches
-- in the bins that end at or below t.
-- Parameters: $runs integer[], ${sweep}s double[]. Template: sweep, cmp (< or <=) and lo_cmp
-- (>= or >, its complement at the lower end of a bin).
-- Defines per_pair(run_id, group_id, {sweep}, value).
run_pairs as (
    select run_id, pair_id, pair_no from pairs where list_contains($runs, run_id)
),
sweep as (
    select unnest(${sweep}s) as {sweep}
),
thresholds as (
    select distinct {sweep} as t from sweep
),
bins as (
    -- lo = a threshold (NULL: the lowest bin), hi = the next one (NULL: the highest bin)
    select a.t as lo, min(b.t) as hi
    from thresholds a
    left join thresholds b on b.t > a.t
    group by a.t
    union all
    select cast(null as double), min(t) from thresholds
),
-- @include lib/match_truth.sql
,
distances as (
    select run_id, pair_no,
           sqrt((x1 - gt_x1) * (x1 - gt_x1) + (y1 - gt_y1) * (y1 - gt_y1)) as d
    from truth
    where list_contains($runs, run_id)
),
binned as (
    select m.run_id, m.pair_no, b.hi, count(*) as n
    from distances m
    join bins b
      on (b.lo is null or m.d {lo_cmp} b.lo) and (b.hi is null or m.d {cmp} b.hi)
    group by m.run_id, m.pair_no, b.hi
),
counts as (
    select c.run_id, c.pair_no, s.{sweep},
           sum(case when c.hi <= s.{sweep} then c.n else 0 end) as hits,
           sum(c.n) as n
    from binned c
    cross join sweep s
    group by c.run_id, c.pair_no, s.{sweep}
),
per_pair as (
    select p.run_id, p.pair_id as group_id, s.{sweep},
           coalesce(cast(c.hits as double) / nullif(cast(c.n as double), 0), 0.0::double) as value
    from run_pairs p
    cross join sweep s
    left join counts c
      on c.run_id = p.run_id and c.pair_no = p.pair_no and c.{sweep} = s.{sweep}
)
