-- The samples of single-label classification runs, shared by top1_accuracy, topk_accuracy,
-- balanced_accuracy, f1_macro, f1_micro and ece. The layout: one list per class (group_id),
-- one item per sample (item_id), a score, label +1 for the sample's true class and -1 for the
-- others (exactly one +1 per sample and a row in every class's list: evaluate checks that
-- first, sql/eval/single_label.sql). A row labelled 0 is no candidate: its class is neither
-- the sample's top-1 nor counted above its true class. A NULL score ranks below every score.
-- Ties of the top score: `input` (and `docid`, which orders a list's items, not a sample's
-- classes) ranks tied classes by list_id, the first list first (np.argmax over columns in
-- ingest order; the confusion view v_confusion uses the same rule); `optimistic` ranks the
-- true class first among its ties, `pessimistic` last; `grouped` counts the expected value
-- over the orders of the ties: a sample whose true class ties with m classes at rank r is a
-- top-k hit with probability min(max((k - r) / m, 0), 1), and its top-1 is each of the m
-- classes at the top with weight 1/m.
-- Parameters: $runs integer[]; $task varchar; $ties varchar. Template: k (the cut-off of a
-- hit: 1, or the parameter k).
-- CTEs it defines:
--   class_lists(run_id, list_id, group_id): the class lists of the runs;
--   candidates(run_id, item_id, list_id, group_id, score, label): the rows labelled +1 or -1;
--   placed(run_id, item_id, list_id, group_id, score, conf, above, tied, earlier): each
--       sample's true class, its score, the sample's top score (the confidence), the
--       candidates scoring above the true class, equal to it (itself included), and equal to
--       it in an earlier list;
--   hits(run_id, item_id, list_id, group_id, conf, hit): hit = 1 where the true class is
--       among the sample's top {k} under $ties, 0 where not, the probability under grouped.
class_lists as (
    select g.run_id, g.list_id, g.group_id
    from groups g
    where list_contains($runs, g.run_id) and g.task = $task and g.list_id is not null
),
candidates as (
    select s.run_id, s.item_id, s.list_id, s.group_id,
           coalesce(s.score, cast('-infinity' as double)) as score, s.label
    from scores s
    where list_contains($runs, s.run_id) and s.task = $task and s.label <> 0
),
placed as (
    select t.run_id, t.item_id, t.list_id, t.group_id, t.score,
           max(c.score) as conf,
           count(case when c.score > t.score then 1 end) as above,
           count(case when c.score = t.score then 1 end) as tied,
           count(case when c.score = t.score and c.list_id < t.list_id then 1 end) as earlier
    from candidates t
    join candidates c on c.run_id = t.run_id and c.item_id = t.item_id
    where t.label = 1
    group by t.run_id, t.item_id, t.list_id, t.group_id, t.score
),
hits as (
    select run_id, item_id, list_id, group_id, conf,
           case
               when $ties = 'grouped' then
                   least(greatest(({k} - above) / nullif(cast(tied as double), 0), 0.0::double),
                         1.0::double)
               when $ties = 'optimistic' then
                   case when above < {k} then 1.0::double else 0.0::double end
               when $ties = 'pessimistic' then
                   case when above + tied <= {k} then 1.0::double else 0.0::double end
               else case when above + earlier < {k} then 1.0::double else 0.0::double end
           end as hit
    from placed
)
