-- Schema 16: graded relevance. Each ranked item may carry a gain, its relevance grade (a
-- non-negative number: TREC's qrels grade, a graded judgement), NULL when the ingest gave
-- none. The graded metrics (ndcg, ndcg_at_k and their exponential variants) read it; a NULL
-- gain counts as 1 for a +1 label and 0 otherwise, so binary runs need none. The binary
-- metrics read the label alone (ingest sets it to +1 where gain > 0 and -1 elsewhere when a
-- gain column comes without a label column).
-- `scores` shows the gain; `score_items`, the lean view the binary metrics read, does not.
alter table list_rows_int_f32 add column gain double;
alter table list_rows_int_f64 add column gain double;
alter table list_rows_text_f32 add column gain double;
alter table list_rows_text_f64 add column gain double;

create or replace view scores as
select g.run_id, g.task, g.group_id, r.item_id, r.score, r.label, cast(r.seq as bigint) as seq,
       r.list_id, r.gain
from (
    select list_id, cast(item as varchar) as item_id, cast(score as double) as score, label, seq,
           gain
    from list_rows_int_f32
    union all
    select list_id, cast(item as varchar) as item_id, score, label, seq, gain
    from list_rows_int_f64
    union all
    select list_id, item as item_id, cast(score as double) as score, label, seq, gain
    from list_rows_text_f32
    union all
    select list_id, item as item_id, score, label, seq, gain from list_rows_text_f64
) r
join groups g on g.list_id = r.list_id;
