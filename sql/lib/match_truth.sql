-- The ground truth of every match: (gt_x1, gt_y1), the true position of
-- (x0, y0) in image 1. Stored with the match when it was given or came from a disparity;
-- NULL when it follows from the pair's homography H (x1 ~ H x0), which is applied here:
-- ((h11 x0 + h12 y0) + h13) / w and ((h21 x0 + h22 y0) + h23) / w, w = (h31 x0 + h32 y0) + h33,
-- each sum left to right: the floats of geometry.transfer. Ingest refuses a pair whose
-- homography sends a match to infinity (w = 0); nullif keeps Spark from raising on one.
-- A filter on run_id over truth reaches both tables (DuckDB and Spark push it down).
-- A match names its pair by pair_no, the pair's number within its run (pairs.pair_no).
-- Defines truth(run_id, pair_no, pair_id, x0, y0, x1, y1, score, gt_x1, gt_y1, seq).
truth as (
    select m.run_id, m.pair_no, p.pair_id, m.x0, m.y0, m.x1, m.y1, m.score,
           coalesce(m.gt_x1, (p.h11 * m.x0 + p.h12 * m.y0 + p.h13)
                             / nullif(p.h31 * m.x0 + p.h32 * m.y0 + p.h33, 0)) as gt_x1,
           coalesce(m.gt_y1, (p.h21 * m.x0 + p.h22 * m.y0 + p.h23)
                             / nullif(p.h31 * m.x0 + p.h32 * m.y0 + p.h33, 0)) as gt_y1,
           m.seq
    from matches m
    join pairs p on p.run_id = m.run_id and p.pair_no = m.pair_no
)
