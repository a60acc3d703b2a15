-- What changed between two runs (evalstore diff): the lists whose value moved most, and the
-- items of one list whose rank moved.

-- name: list_moves
-- $a, $b integer: the two runs; $task varchar; $metric varchar (a per-list metric, cached
-- for both runs); $params varchar (its parameters, as cached); $limit integer.
-- Out: group_id, value_a, value_b, diff (b - a; NULL when either is NULL), the lists in the
-- order of |diff|, largest first, then lists with a value in one run only.
select coalesce(a.group_id, b.group_id) as group_id, a.value as value_a, b.value as value_b,
       b.value - a.value as diff
from (select group_id, value from list_values
      where run_id = $a and task = $task and metric = $metric and params = $params) a
full join (select group_id, value from list_values
           where run_id = $b and task = $task and metric = $metric and params = $params) b
  on a.group_id is not distinct from b.group_id
order by abs(b.value - a.value) desc nulls last, 1
limit $limit;

-- name: item_moves
-- $a, $b integer: the two runs; $task varchar; $group varchar: the list (its group_id);
-- $limit integer. Ranks are 1 + the number of higher scores (a tie shares its best rank);
-- an item not retrieved (NULL score) has no rank.
-- Out: item_id, rank_a, rank_b, moved (rank_b - rank_a), label_a, label_b, score_a, score_b,
-- by |moved| largest first, then items in one run only.
with ranked as (
    select run_id, item_id, label, score,
           case when score is not null
                then rank() over (partition by run_id order by score desc) end as rnk
    from scores
    where run_id in ($a, $b) and task = $task and group_id is not distinct from $group
)
select coalesce(a.item_id, b.item_id) as item_id, a.rnk as rank_a, b.rnk as rank_b,
       b.rnk - a.rnk as moved, a.label as label_a, b.label as label_b,
       a.score as score_a, b.score as score_b
from (select * from ranked where run_id = $a) a
full join (select * from ranked where run_id = $b) b on a.item_id = b.item_id
order by abs(b.rnk - a.rnk) desc nulls last, coalesce(a.rnk, b.rnk), 1
limit $limit;

-- name: list_exists
-- $a, $b integer; $task varchar; $group varchar: how many of the two runs have that list.
select count(distinct run_id) from groups
where run_id in ($a, $b) and task = $task and group_id is not distinct from $group
  and list_id is not null;

-- name: det_category_id
-- $run_id integer, $category varchar: the run's category of that id, else of that name.
-- Out: category_id (NULL when the run has none).
select coalesce(max(case when category_id = $category then category_id end),
                min(case when name = $category then category_id end)) as category_id
from det_categories where run_id = $run_id;

-- name: det_category_boxes
-- $run_id integer, $category_id varchar: the run's detections of one category, in input
-- order. Out: det_id, image_id, x, y, w, h, score, area.
select det_id, image_id, x, y, w, h, score, area
from det_boxes
where run_id = $run_id and category_id = $category_id
order by det_id;

-- name: det_category_truth
-- $run_id integer, $category_id varchar: the run's ground-truth boxes of one category, in
-- input order. Out: gt_id, image_id, x, y, w, h, area, iscrowd.
select gt_id, image_id, x, y, w, h, area, iscrowd
from det_truth
where run_id = $run_id and category_id = $category_id
order by seq;
