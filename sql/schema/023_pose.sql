-- Schema 23: image pairs with cameras, and the relative poses estimated from their matches.
--   pair_cameras: one row per image pair of a keypoint run given with cameras (`--pairs` with
--     K0, K1 and T_0to1, SuperGlue's pairs file or its columns): the intrinsics k0_11..k0_33
--     and k1_11..k1_33 (row-major 3 x 3) and the true relative pose T_0to1 = [R | t], image 0's
--     camera frame to image 1's (t_11..t_33 the rotation, t_14, t_24, t_34 the translation).
--     n_keypoints0: the keypoints detected in image 0 (SuperGlue's matching score divides by
--     it), NULL when not given.
--   pose_estimates: the relative pose estimated from a pair's matches with one setting
--     (method, threshold in pixels, confidence), made on first use and stored: r11..r33 and
--     the unit translation t1..t3 (NULL where estimation failed), the errors against
--     T_0to1 in degrees (err_t folded to at most 90; +inf where estimation failed) and the
--     RANSAC inliers.
create table pair_cameras (
    run_id        integer not null,
    pair_no       integer not null,
    k0_11 double not null, k0_12 double not null, k0_13 double not null,
    k0_21 double not null, k0_22 double not null, k0_23 double not null,
    k0_31 double not null, k0_32 double not null, k0_33 double not null,
    k1_11 double not null, k1_12 double not null, k1_13 double not null,
    k1_21 double not null, k1_22 double not null, k1_23 double not null,
    k1_31 double not null, k1_32 double not null, k1_33 double not null,
    t_11 double not null, t_12 double not null, t_13 double not null, t_14 double not null,
    t_21 double not null, t_22 double not null, t_23 double not null, t_24 double not null,
    t_31 double not null, t_32 double not null, t_33 double not null, t_34 double not null,
    n_keypoints0  integer,
    primary key (run_id, pair_no)
);

create table pose_estimates (
    run_id      integer not null,
    pair_no     integer not null,
    method      varchar not null,
    threshold   double not null,
    confidence  double not null,
    r11 double, r12 double, r13 double,
    r21 double, r22 double, r23 double,
    r31 double, r32 double, r33 double,
    t1 double, t2 double, t3 double,
    err_t       double not null,
    err_r       double not null,
    n_inliers   integer not null,
    primary key (run_id, pair_no, method, threshold, confidence)
);
