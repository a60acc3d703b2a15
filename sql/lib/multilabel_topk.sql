-- The predicted labels of the top-k form: a label among its image's $k highest-scoring
-- non-ignored labels whose score also passes the threshold (ML-GCN's overall_topk). Equal
-- scores are ordered by $ties: optimistic puts positives first, pessimistic negatives first,
-- each then in the order of input; input puts the class whose list comes first in the input
-- first; docid the greater class id (text) first; under grouped a tie group straddling the
-- cut is in the top k with the share (k - n_above) / n_tied of each of its labels, so the
-- counts are their expected values over random orders of the ties. Labels scored NULL are
-- never predicted and rank below every score.
-- Parameters: $k integer >= 1; $ties varchar. Needs lib/multilabel_cells.sql.
-- CTE it defines: picked(run_id, list_id, threshold, label, w), w = the label's share.
keyed as (
    select run_id, list_id, item_id, score, label,
           case when $ties = 'optimistic' then -label
                when $ties = 'pessimistic' then label
                else 0 end as k1,
           case when $ties = 'docid' then group_id end as k3,
           case when $ties = 'docid' then 0 else first_seq end as k2
    from cells
    where score is not null
),
ranked as (
    select run_id, list_id, score, label,
           rank() over (partition by run_id, item_id order by score desc) - 1 as n_above,
           count(*) over (partition by run_id, item_id, score) as n_tied,
           row_number() over (
               partition by run_id, item_id order by score desc, k1, k3 desc, k2
           ) as rn
    from keyed
),
shares as (
    select run_id, list_id, score, label,
           case when $ties = 'grouped'
                then cast(greatest(0, least(n_tied, $k - n_above)) as double)
                     / nullif(cast(n_tied as double), 0)
                when rn <= $k then 1.0::double
                else 0.0::double end as w
    from ranked
),
picked as (
    select h.run_id, h.list_id, s.threshold, h.label, h.w
    from shares h
    cross join sweep s
    where h.score >= s.threshold and h.w > 0
)
