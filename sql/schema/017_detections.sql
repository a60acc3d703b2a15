-- Schema 17: a detector's boxes and the ground truth they are judged against, stored raw (as
-- the readers give them: evalstore/ingest/formats/detection.py), so that every detection
-- protocol (COCO, the VOC devkits, TIDE) recomputes its matching from these rows. Ids are
-- text (COCO's integer ids as their decimal text); boxes are COCO's [x, y, w, h] in float64,
-- with the corners as written (x1..y2: VOC's +1-pixel protocols read them) where the input had
-- corners, else NULL. Deleting a run deletes its rows (store/delete_run_det_*).
--   det_images: the run's images (an image without boxes still counts in the protocols'
--     averages); width, height and file_name where the input gave them.
--   det_categories: the run's categories.
--   det_truth: the ground-truth boxes, seq their place in the input (from 0: a later box wins
--     an equal IoU in COCO's matching); area: the annotation's `area` (COCO's area ranges read
--     it, not w*h) or w*h; iscrowd; ignore (COCO's field, NULL where absent; pycocotools
--     overwrites it with iscrowd); difficult (VOC's flag, NULL where absent).
--   det_boxes: the detections; det_id: the position in the input, from 0 (the order of equal
--     scores in the references' stable sorts); area: w*h, as pycocotools' loadRes sets it.
create table det_images (
    run_id     integer not null,
    image_id   varchar not null,
    file_name  varchar,
    width      bigint,
    height     bigint,
    primary key (run_id, image_id)
);

create table det_categories (
    run_id       integer not null,
    category_id  varchar not null,
    name         varchar,
    primary key (run_id, category_id)
);

create table det_truth (
    run_id       integer not null,
    gt_id        varchar not null,
    seq          bigint not null,
    image_id     varchar not null,
    category_id  varchar not null,
    x            double not null,
    y            double not null,
    w            double not null,
    h            double not null,
    area         double not null,
    iscrowd      boolean not null,
    ignore       boolean,
    difficult    boolean,
    x1           double,
    y1           double,
    x2           double,
    y2           double
);

create table det_boxes (
    run_id       integer not null,
    det_id       bigint not null,
    image_id     varchar not null,
    category_id  varchar not null,
    x            double not null,
    y            double not null,
    w            double not null,
    h            double not null,
    score        double not null,
    area         double not null,
    x1           double,
    y1           double,
    x2           double,
    y2           double
);

-- The matches a protocol makes, on first use, from the rows above (evalstore/analysis/
-- det_matching.py), as keypoint runs' homographies are estimated: one ranked list per
-- (matching, category, IoU threshold, area range), the maxDets cut read from `rank`.
--   det_matches: one row per kept detection and IoU threshold; seq: its place in the
--     category's ranking (descending score, then images in the protocol's order, then rank);
--     rank: its rank in its image and category; label: +1 matched, -1 unmatched, 0 ignored
--     under the area range all, label_small .. label_large under COCO's other ranges (NULL
--     for a matching without them).
--   det_positives: the ground truth each list must find (non-ignored boxes) per category and
--     area range: unmatched ground truth counts as not retrieved.
--   det_matched: the runs whose matches are made, per matching (coco, voc_eval, vocevaldet,
--     tide); det_thresholds: the IoU threshold of each iou_index of a matching.
--   det_tide: TIDE's breakdown (tidecv 1.0.1, evalstore/core/detection_tide.py), made on first
--     use: per error type (Cls, Loc, Both, Dupe, Bkg, Miss, FalsePos, FalseNeg) the dAP of
--     fixing it, and the AP itself (error 'AP'), in percent as tidecv gives them, for the
--     run (category_id NULL) and per category; n_errors: count_errors() (the run's rows).
create table det_matches (
    run_id        integer not null,
    matching      varchar not null,
    category_id   varchar not null,
    iou_index     smallint not null,
    det_id        bigint not null,
    seq           bigint not null,
    rank          integer not null,
    score         double not null,
    label         tinyint not null,
    label_small   tinyint,
    label_medium  tinyint,
    label_large   tinyint
);

create table det_positives (
    run_id       integer not null,
    matching     varchar not null,
    category_id  varchar not null,
    area         varchar not null,
    n_positives  bigint not null
);

create table det_matched (
    run_id      integer not null,
    matching    varchar not null,
    primary key (run_id, matching)
);

create table det_thresholds (
    run_id     integer not null,
    matching   varchar not null,
    iou_index  smallint not null,
    iou        double not null
);

create table det_tide (
    run_id       integer not null,
    category_id  varchar,
    error        varchar not null,
    value        double not null,
    n_errors     bigint
);
