-- Schema 3: keypoint matches and counted outcomes.
-- pairs:    one row per image pair of a keypoint run. h11..h33: the ground-truth homography
--           (x1 ~ H x0), NULL when the truth came as a disparity or as points; e11..e33: the
--           homography estimated from the pair's matches (image 0 -> 1), r11..r33 its inverse
--           (image 1 -> 0, the direction of the reprojection error), both NULL when estimation
--           failed; n_inliers of that estimate; n_invalid: matches left out at ingest for an
--           invalid (zero) disparity; slices: metadata such as sequence, kind.
-- matches:  one row per match: (x0, y0) in image 0, (x1, y1) in image 1, the ground-truth
--           position gt_x1, gt_y1 of (x0, y0) in image 1, optional score, input order seq.
-- outcomes: one row per group (image pair, sequence): counts of true positives, false
--           positives and false negatives.
create table pairs (
    run_id      integer not null,
    pair_id     varchar not null,
    h11   double,
    h12   double,
    h13   double,
    h21   double,
    h22   double,
    h23   double,
    h31   double,
    h32   double,
    h33   double,
    e11   double,
    e12   double,
    e13   double,
    e21   double,
    e22   double,
    e23   double,
    e31   double,
    e32   double,
    e33   double,
    r11   double,
    r12   double,
    r13   double,
    r21   double,
    r22   double,
    r23   double,
    r31   double,
    r32   double,
    r33   double,
    width       integer,
    height      integer,
    n_inliers   integer,
    n_invalid   bigint not null default 0,
    slices      map(varchar, varchar) not null default map(),
    primary key (run_id, pair_id)
);

create table matches (
    run_id   integer not null,
    pair_id  varchar not null,
    x0       double not null,
    y0       double not null,
    x1       double not null,
    y1       double not null,
    score    double,
    gt_x1    double not null,
    gt_y1    double not null,
    seq      bigint not null
);

create table outcomes (
    run_id    integer not null,
    group_id  varchar not null,
    tp        bigint not null,
    fp        bigint not null,
    fn        bigint not null
);
