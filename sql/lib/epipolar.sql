-- The symmetric epipolar distance of every match of a run's image pairs with cameras, and the
-- matches below each threshold (epipolar_precision, matching_score): SuperGlue's
-- compute_epipolar_error (magicleap/SuperGluePretrainedNetwork models/utils.py @
-- ddcf11f42e7e; LoFTR's symmetric_epipolar_distance is the same). The points are normalised by
-- their intrinsics, p = ((x - cx) / fx, (y - cy) / fy, 1); E = [t]x R of the true T_0to1
-- (t_14, t_24, t_34; t_11..t_33), each entry added in the order of the matrix product
-- t_skew @ R; then
--   d = (p1' E p0)^2 * (1 / ((E p0)_1^2 + (E p0)_2^2) + 1 / ((E' p1)_1^2 + (E' p1)_2^2))
-- (a squared distance on the normalised plane). A match is correct when d < threshold; a
-- zero denominator (d infinite or NaN in NumPy) is not correct.
-- Parameters: $runs integer[], $thresholds double[].
-- Output: the CTEs cameras (pair_cameras of the runs with each pair's pair_id and E: e11..e33)
-- and counted(run_id, pair_no, threshold, n_matches, n_correct): every pair with cameras at
-- every threshold, 0 and 0 without matches.
cameras as (
    select c.run_id, c.pair_no, p.pair_id, c.n_keypoints0,
           c.k0_11, c.k0_13, c.k0_22, c.k0_23, c.k1_11, c.k1_13, c.k1_22, c.k1_23,
           0.0::double * c.t_11 + (-c.t_34) * c.t_21 + c.t_24 * c.t_31 as e11,
           0.0::double * c.t_12 + (-c.t_34) * c.t_22 + c.t_24 * c.t_32 as e12,
           0.0::double * c.t_13 + (-c.t_34) * c.t_23 + c.t_24 * c.t_33 as e13,
           c.t_34 * c.t_11 + 0.0::double * c.t_21 + (-c.t_14) * c.t_31 as e21,
           c.t_34 * c.t_12 + 0.0::double * c.t_22 + (-c.t_14) * c.t_32 as e22,
           c.t_34 * c.t_13 + 0.0::double * c.t_23 + (-c.t_14) * c.t_33 as e23,
           (-c.t_24) * c.t_11 + c.t_14 * c.t_21 + 0.0::double * c.t_31 as e31,
           (-c.t_24) * c.t_12 + c.t_14 * c.t_22 + 0.0::double * c.t_32 as e32,
           (-c.t_24) * c.t_13 + c.t_14 * c.t_23 + 0.0::double * c.t_33 as e33
    from pair_cameras c
    join pairs p on p.run_id = c.run_id and p.pair_no = c.pair_no
    where list_contains($runs, c.run_id)
),
normalised as (
    select c.run_id, c.pair_no, c.e11, c.e12, c.e13, c.e21, c.e22, c.e23, c.e31, c.e32, c.e33,
           (m.x0 - c.k0_13) / nullif(c.k0_11, 0) as u0, (m.y0 - c.k0_23) / nullif(c.k0_22, 0) as v0,
           (m.x1 - c.k1_13) / nullif(c.k1_11, 0) as u1, (m.y1 - c.k1_23) / nullif(c.k1_22, 0) as v1
    from matches m
    join cameras c on c.run_id = m.run_id and c.pair_no = m.pair_no
),
products as (
    select run_id, pair_no, u1, v1,
           e11 * u0 + e12 * v0 + e13 as ep0_1,
           e21 * u0 + e22 * v0 + e23 as ep0_2,
           e31 * u0 + e32 * v0 + e33 as ep0_3,
           u1 * e11 + v1 * e21 + e31 as etp1_1,
           u1 * e12 + v1 * e22 + e32 as etp1_2
    from normalised
),
distances as (
    select run_id, pair_no,
           (u1 * ep0_1 + v1 * ep0_2 + ep0_3) * (u1 * ep0_1 + v1 * ep0_2 + ep0_3)
             * (1.0::double / nullif(ep0_1 * ep0_1 + ep0_2 * ep0_2, 0)
                + 1.0::double / nullif(etp1_1 * etp1_1 + etp1_2 * etp1_2, 0)) as d
    from products
),
epi_ths as (
    select unnest($thresholds) as threshold
),
counted as (
    select c.run_id, c.pair_no, s.threshold,
           count(x.pair_no) as n_matches,
           count(case when x.d < s.threshold then 1 end) as n_correct
    from cameras c
    cross join epi_ths s
    left join distances x on x.run_id = c.run_id and x.pair_no = c.pair_no
    group by c.run_id, c.pair_no, s.threshold
)
