-- Queries of dashboards/hpatches.toml.

-- name: hpatches_map
-- The HPatches results: mean AP of each descriptor run on patch verification, image
-- matching and patch retrieval, over all lists and per noise level (easy / hard / tough)
-- and per sequence kind (illumination / viewpoint) when the groups files give `noise` and
-- `kind` slice columns. Grouped tie policy. Means are taken in a fixed order (the same
-- database gives the same bits).
-- Only HPatches runs: those whose params record `descriptor` (`evalstore ingest --format
-- hpatches` records it for every run it makes, as the demo does) or that are tagged
-- `hpatches` (lists computed elsewhere: `evalstore tag RUN hpatches`). Other runs with
-- verification, matching or retrieval AP (a TREC run, a classifier's retrieval run) are not
-- descriptors and are left out.
-- Parameters: $experiments varchar[], $runs integer[] (NULL = all).
-- Output: split, run, task, map, n_lists.
with hpatches_runs as (
    select run_id
    from v_runs
    where params ->> 'descriptor' is not null or list_contains(tags, 'hpatches')
),
lists as (
    select run_id, run, created_at, task, group_id, value, slices
    from v_lists
    where run_id in (select run_id from hpatches_runs)
      and metric = 'ap' and task in ('verification', 'matching', 'retrieval')
      and params ->> 'ties' = 'grouped'
      and ($experiments is null or list_contains($experiments, experiment))
      and (list_contains($runs, run_id)
            or ($runs is null and run_id not in (select step_run_id from run_steps)))
),
overall as (
    select run_id, run, created_at, task, 'all lists' as split, 0 as split_order,
           avg(value order by group_id) as map, count(value) as n_lists
    from lists
    group by run_id, run, created_at, task
),
by_slice as (
    select run_id, run, created_at, task, split,
           case when split like 'noise=%' then 1 else 2 end as split_order,
           avg(value order by group_id) as map, count(value) as n_lists
    from (
        select run_id, run, created_at, task, group_id, value,
               unnest(map_entries(slices)) as entry
        from lists
        where slices is not null
    ) e
    cross join (select entry.key || '=' || entry.value as split)
    where entry.key in ('noise', 'kind')
    group by run_id, run, created_at, task, split
)
select split, run, task, map, n_lists
from (select * from overall union all select * from by_slice)
order by split_order,
         case split when 'noise=easy' then 1 when 'noise=hard' then 2
                    when 'noise=tough' then 3 else 4 end,
         split,
         case task when 'verification' then 1 when 'matching' then 2 else 3 end,
         created_at, run_id;
