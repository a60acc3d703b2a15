-- Per image pair and per {sweep} in ${sweep}s: the fraction of the pair's matches whose
-- distance d = sqrt((x1 - gt_x1)^2 + (y1 - gt_y1)^2) to its ground-truth position satisfies
-- d {cmp} {sweep}. Every pair of the run counts; a pair without matches scores 0.
-- Parameters: $runs integer[], ${sweep}s double[].
-- Defines per_pair(run_id, group_id, {sweep}, value).
run_pairs as (
    select run_id, pair_id from pairs where list_contains($runs, run_id)
),
sweep as (
    select unnest(${sweep}s) as {sweep}
),
distances as (
    select run_id, pair_id,
           sqrt((x1 - gt_x1) * (x1 - gt_x1) + (y1 - gt_y1) * (y1 - gt_y1)) as d
    from matches
    where list_contains($runs, run_id)
),
counts as (
    select m.run_id, m.pair_id, s.{sweep},
           sum(case when m.d {cmp} s.{sweep} then 1 else 0 end) as hits,
           count(*) as n
    from distances m
    cross join sweep s
    group by m.run_id, m.pair_id, s.{sweep}
),
per_pair as (
    select p.run_id, p.pair_id as group_id, s.{sweep},
           coalesce(cast(c.hits as double) / nullif(cast(c.n as double), 0), 0.0::double) as value
    from run_pairs p
    cross join sweep s
    left join counts c
      on c.run_id = p.run_id and c.pair_id = p.pair_id and c.{sweep} = s.{sweep}
)
