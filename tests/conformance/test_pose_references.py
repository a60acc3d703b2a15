"""evalstore's pose core (``evalstore.core.pose``) against the evaluation code it follows,
transcribed in reference_pose.py: SuperGlue (magicleap/SuperGluePretrainedNetwork @ ddcf11f4),
LoFTR (zju3dv/LoFTR @ df7ca80f), glue-factory (cvg/glue-factory @ 2d17e3b3) and the Image
Matching Challenge (ubc-vision/image-matching-benchmark @ e3c1cbd6), on random scenes (random
intrinsics, a random rigid motion, 3D points projected into both cameras with noise and
outliers) and random error lists, and against the slow loops of tests/pose_loops.py.

Equal means: the same estimate bit for bit (same input, same OpenCV calls), the same AUCs bit
for bit (the same NumPy steps), angles and distances to 1e-12 relative.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstore.core import pose
from evalstore.core.matching import corner_error
from evalstore.errors import InvalidInput
from evalstore.metrics.pose_catalogue import GLUEFACTORY_RANSAC_SWEEP
from tests import pose_loops as loops
from tests.conformance import reference_pose as ref
from tests.conftest import examples

REL = 1e-12
INF = math.inf

# ----------------------------------------------------------------------- random scenes


@dataclass
class Scene:
    """One image pair: matched pixels, intrinsics, the true pose 0 -> 1, image 0's keypoints."""

    kpts0: np.ndarray
    kpts1: np.ndarray
    K0: np.ndarray
    K1: np.ndarray
    T_0to1: np.ndarray
    n_keypoints0: int


def _rotation(rng: np.random.Generator, max_deg: float) -> np.ndarray:
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    angle = np.deg2rad(rng.uniform(0, max_deg))
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * (k @ k)  # Rodrigues


def _intrinsics(rng: np.random.Generator, w: int, h: int) -> np.ndarray:
    fx = rng.uniform(300, 1200)
    fy = fx * rng.choice([1.0, rng.uniform(0.9, 1.1)])  # square pixels or not
    cx, cy = w / 2 + rng.uniform(-20, 20), h / 2 + rng.uniform(-20, 20)
    return np.array([[fx, 0, cx], [0, fy, cy], [0, 0, 1.0]])


def make_scene(seed: int, n: int, outliers: float, noise: float) -> Scene:
    """n matches of points in front of both cameras (640 x 480), pixel noise of sd ``noise``,
    a fraction ``outliers`` of them replaced by random pixels in image 1."""
    rng = np.random.default_rng(seed)
    w, h = 640, 480
    K0, K1 = _intrinsics(rng, w, h), _intrinsics(rng, w, h)
    T = np.eye(4)
    T[:3, :3] = _rotation(rng, 30)
    T[:3, 3] = rng.normal(size=3) * rng.uniform(0.2, 2.0)
    pts = []
    while len(pts) < n:
        x = np.array([rng.uniform(-3, 3), rng.uniform(-2, 2), rng.uniform(4, 12)])
        x1 = T[:3, :3] @ x + T[:3, 3]
        if x1[2] > 0.1:
            pts.append((x, x1))
    p0 = np.array([K0 @ x / x[2] for x, _ in pts]).reshape(-1, 3)[:, :2]
    p1 = np.array([K1 @ x1 / x1[2] for _, x1 in pts]).reshape(-1, 3)[:, :2]
    p0 = p0 + rng.normal(scale=noise, size=p0.shape)
    p1 = p1 + rng.normal(scale=noise, size=p1.shape)
    bad = rng.random(n) < outliers
    p1[bad] = rng.uniform([0, 0], [w, h], size=(int(bad.sum()), 2))
    return Scene(p0, p1, K0, K1, T, n + int(rng.integers(0, 50)))


scenes = st.builds(
    make_scene,
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 120),
    outliers=st.sampled_from([0.0, 0.2, 0.5, 0.9]),
    noise=st.sampled_from([0.0, 0.5, 2.0]),
)


def same_estimate(a: pose.PoseEstimate, b: object) -> bool:
    if a is None or b is None:
        return a is None and b is None
    assert isinstance(b, tuple)
    return all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def close(a: float, b: float, rel: float = REL) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b or abs(a - b) <= rel * abs(b)


# ------------------------------------------------------------------- estimate and error


def check_estimate_and_error(s: Scene, thresh: float) -> None:
    got = pose.estimate_pose(s.kpts0, s.kpts1, s.K0, s.K1, thresh)
    loftr = ref.loftr_estimate_pose(s.kpts0, s.kpts1, s.K0, s.K1, thresh)
    assert same_estimate(got, loftr)
    if got is None:
        assert len(s.kpts0) < 5 or loftr is None
        return
    assert same_estimate(got, ref.sg_estimate_pose(s.kpts0, s.kpts1, s.K0, s.K1, thresh))
    R, t, _ = got
    err_t, err_r = pose.pose_errors(s.T_0to1, R, t)
    sg_t, sg_r = ref.sg_compute_pose_error(s.T_0to1, R, t)
    lo_t, lo_r = ref.loftr_relative_pose_error(s.T_0to1, R, t)
    assert close(err_t, float(sg_t)) and close(err_r, float(sg_r))
    assert close(err_t, float(lo_t)) and close(err_r, float(lo_r))
    assert 0 <= err_t <= 90 and 0 <= err_r <= 180


def check_gluefactory_estimate(s: Scene, thresh: float) -> None:
    got = pose.estimate_pose_gluefactory(s.kpts0, s.kpts1, s.K0, s.K1, thresh)
    est = ref.gf_opencv_relative_pose(s.kpts0, s.kpts1, s.K0, s.K1, thresh)
    assert (got is not None) == est["success"]
    if got is not None:
        assert np.array_equal(got[0], est["M_0to1"][0])
        assert np.array_equal(got[1], est["M_0to1"][1])
        assert np.array_equal(got[2], est["inliers"])


#: a few scenes for the fast loop: (seed, matches, outlier fraction, pixel noise)
FIXED_SCENES = [(1, 60, 0.0, 0.5), (2, 100, 0.1, 0.3), (3, 8, 0.0, 0.0)]


@pytest.mark.parametrize(("seed", "n", "outliers", "noise"), FIXED_SCENES)
def test_estimate_and_error_equal_the_references(
    seed: int, n: int, outliers: float, noise: float
) -> None:
    s = make_scene(seed, n, outliers, noise)
    for thresh in (0.5, 1.0):
        check_estimate_and_error(s, thresh)
        check_gluefactory_estimate(s, thresh)


def test_a_run_equals_match_pairs_summary() -> None:
    """match_pairs.py --eval: AUC@5/10/20 of max(err_t, err_R), mean precision, mean matching
    score over the pairs (a failed pair, 3 matches, included)."""
    run = [make_scene(seed, n, o, z) for seed, n, o, z in [*FIXED_SCENES, (9, 3, 0.0, 0.0)]]
    results, errors, precisions, scores = [], [], [], []
    for s in run:
        kpts0_all = np.zeros((s.n_keypoints0, 2))
        results.append(ref.sg_match_pairs_pair(s.kpts0, s.kpts1, kpts0_all, s.T_0to1, s.K0, s.K1))
        est = pose.estimate_pose(s.kpts0, s.kpts1, s.K0, s.K1, 1.0)
        errors.append(INF if est is None else max(pose.pose_errors(s.T_0to1, est[0], est[1])))
        d = pose.epipolar_errors(s.kpts0, s.kpts1, s.T_0to1, s.K0, s.K1)
        precisions.append(pose.epipolar_precision(d))
        scores.append(pose.matching_score(d, s.n_keypoints0))
    expected = ref.sg_match_pairs_summary(results)
    assert errors[-1] == INF
    assert pose.pose_auc(errors, pose.POSE_AUC_THRESHOLDS) == [float(a) for a in expected[:3]]
    assert float(np.mean(precisions)) == expected[3] and float(np.mean(scores)) == expected[4]


# OpenCV's RANSAC at confidence 0.99999 on a few matches with many outliers runs its 1,000
# iterations: up to 0.4 s an example, so these are slow tests without a deadline
@pytest.mark.slow
@settings(max_examples=examples(100), deadline=None)
@given(scene=scenes, thresh=st.sampled_from([0.5, 1.0, 2.0]))
def test_estimate_and_error_equal_superglue_and_loftr(scene: Scene, thresh: float) -> None:
    check_estimate_and_error(scene, thresh)


@pytest.mark.slow
@settings(max_examples=examples(50), deadline=None)
@given(scene=scenes, thresh=st.sampled_from([0.5, 1.0, 3.0]))
def test_gluefactory_estimator_equals_its_opencv_estimator(scene: Scene, thresh: float) -> None:
    check_gluefactory_estimate(scene, thresh)


def test_fewer_than_5_matches_fail_with_infinite_error() -> None:
    s = make_scene(3, 4, 0.0, 0.0)
    assert pose.estimate_pose(s.kpts0, s.kpts1, s.K0, s.K1, 1.0) is None
    assert ref.sg_estimate_pose(s.kpts0, s.kpts1, s.K0, s.K1, 1.0) is None
    # match_pairs.py: no estimate -> err_t = err_R = inf; the pair is in the AUC's denominator
    res = ref.sg_match_pairs_pair(s.kpts0, s.kpts1, s.kpts0, s.T_0to1, s.K0, s.K1)
    assert res["error_t"] == res["error_R"] == INF
    assert pose.pose_auc([INF], [5, 10, 20]) == [0.0, 0.0, 0.0]
    # (0, 0)-(1, 1/2): 0.25, then flat at 1/2 up to 5: 2, over 5
    assert pose.pose_auc([1.0, INF], [5]) == ref.sg_pose_auc(np.array([1.0, INF]), [5]) == [0.45]


def test_clean_scene_recovers_the_pose() -> None:
    s = make_scene(11, 200, 0.0, 0.0)
    got = pose.estimate_pose(s.kpts0, s.kpts1, s.K0, s.K1, 1.0)
    assert got is not None
    err_t, err_r = pose.pose_errors(s.T_0to1, got[0], got[1])
    assert err_t < 1e-3 and err_r < 1e-3 and bool(got[2].all())


def test_translation_sign_fold() -> None:
    # an essential matrix fixes t up to sign: t and -t have the same error, at most 90 degrees
    T = np.eye(4)
    T[:3, 3] = (1.0, 0.0, 0.0)
    t100 = np.array([np.cos(np.deg2rad(100)), np.sin(np.deg2rad(100)), 0.0])  # 100 deg off
    e, _ = pose.pose_errors(T, np.eye(3), t100)
    assert e == pytest.approx(80.0, rel=1e-12)
    assert pose.pose_errors(T, np.eye(3), -t100)[0] == pytest.approx(e, rel=1e-12)
    assert pose.pose_errors(T, np.eye(3), np.array([-3.0, 0, 0])) == (0.0, 0.0)
    assert pose.pose_errors(T, np.eye(3), np.array([0.0, 2.0, 0])) == (90.0, 0.0)
    assert ref.sg_compute_pose_error(T, np.eye(3), -t100)[0] == pytest.approx(80.0, rel=1e-12)


# --------------------------------------------------------- epipolar error, precision, score


@settings(max_examples=examples(100))
@given(scene=scenes)
def test_epipolar_precision_and_score_equal_match_pairs(scene: Scene) -> None:
    s = scene
    got = pose.epipolar_errors(s.kpts0, s.kpts1, s.T_0to1, s.K0, s.K1)
    if len(s.kpts0):
        expected = ref.sg_compute_epipolar_error(s.kpts0, s.kpts1, s.T_0to1, s.K0, s.K1)
        assert np.array_equal(got, expected, equal_nan=True)  # the same steps
        loftr = ref.loftr_symmetric_epipolar_distance(
            s.kpts0, s.kpts1, ref.loftr_essential(s.T_0to1), s.K0, s.K1
        )
        assert all(close(a, b) for a, b in zip(got, loftr, strict=True))
        T, K0, K1 = s.T_0to1.tolist(), s.K0.tolist(), s.K1.tolist()
        slow = [
            loops.epipolar_distance_loop(a, b, T, K0, K1)
            for a, b in zip(s.kpts0.tolist(), s.kpts1.tolist(), strict=True)
        ]
        # 1e-9: the slow loop's scalar sums round differently, and d is a difference squared
        assert all(close(a, b, 1e-9) or abs(a - b) < 1e-15 for a, b in zip(got, slow, strict=True))
    kpts0_all = np.zeros((s.n_keypoints0, 2))  # match_pairs.py counts them: len(kpts0)
    _, precision, score, _ = ref.sg_match_pairs_matching(
        s.kpts0, s.kpts1, kpts0_all, s.T_0to1, s.K0, s.K1
    )
    assert pose.epipolar_precision(got) == precision
    assert pose.matching_score(got, s.n_keypoints0) == score
    assert pose.epipolar_precision(got) == ref.loftr_epidist_prec([got], [5e-4])[0]
    assert pose.epipolar_precision(got) == loops.epipolar_precision_loop(got.tolist(), 5e-4)
    assert pose.matching_score(got, s.n_keypoints0) == loops.matching_score_loop(
        got.tolist(), s.n_keypoints0, 5e-4
    )


@settings(max_examples=examples(100))
@given(scene=scenes, th=st.sampled_from([1e-4, 5e-4, 1e-3]))
def test_gluefactory_epipolar_precision_equals_eval_matches_epipolar(
    scene: Scene, th: float
) -> None:
    s = scene
    got = pose.epipolar_errors_gluefactory(s.kpts0, s.kpts1, s.T_0to1, s.K0, s.K1)
    expected, prec = ref.gf_epi_prec(s.kpts0, s.kpts1, s.T_0to1, s.K0, s.K1, th)
    assert np.array_equal(got, expected)
    assert pose.epipolar_precision(got, th) == prec
    # not SuperGlue's test: the mean of the two line distances vs the sum of their squares
    squared = pose.epipolar_errors(s.kpts0, s.kpts1, s.T_0to1, s.K0, s.K1)
    # (where the points are off their lines: noise-free matches give ~0 under both)
    if len(got) and (got > 1e-6).any():
        assert not np.allclose(got, squared)


def test_epipolar_by_hand() -> None:
    # K = I, R = I, t = (1, 0, 0): E = [t]x, epipolar lines are rows y1 = y0. Match
    # (0, 0) <-> (5, 0.02): x1' E x0 = -0.02, lines (0, -1, 0) and (0, 1, -0): d = 4e-4 * 2
    T = np.eye(4)
    T[:3, 3] = (1.0, 0.0, 0.0)
    d = pose.epipolar_errors(
        [[0.0, 0.0], [0.0, 0.0]], [[5.0, 0.02], [5.0, 0.0]], T, np.eye(3), np.eye(3)
    )
    assert d.tolist() == pytest.approx([8e-4, 0.0], rel=1e-12)
    assert pose.epipolar_precision(d) == 0.5  # 8e-4 >= 5e-4
    assert pose.epipolar_precision(d, threshold=1e-3) == 1.0
    assert pose.matching_score(d, 4) == 0.25
    # correct means strictly below the threshold (``epi_errs < 5e-4``)
    assert pose.epipolar_precision([5e-4, 1e-4]) == 0.5 == pose.matching_score([5e-4, 1e-4], 2)
    # no matches: precision 0; no keypoints: score 0 (match_pairs.py's else branches)
    assert pose.epipolar_precision([]) == 0.0 and pose.matching_score([], 0) == 0.0
    # a true translation of 0: E = 0, every distance NaN, every match incorrect
    nan = pose.epipolar_errors([[1.0, 2.0]], [[3.0, 4.0]], np.eye(4), np.eye(3), np.eye(3))
    assert np.isnan(nan).all() and pose.epipolar_precision(nan) == 0.0
    with pytest.raises(InvalidInput, match="n_keypoints0"):
        pose.matching_score(d, 1)


# ------------------------------------------------------------------------- the AUCs

errors_lists = st.lists(
    st.one_of(
        st.floats(0, 30, allow_nan=False),
        st.sampled_from([0.0, 1.0, 5.0, 10.0, 20.0, INF]),  # ties, errors at a threshold
    ),
    max_size=60,
)
auc_thresholds = st.lists(
    st.sampled_from([1.0, 3.0, 5.0, 10.0, 20.0, 0.5, 7.3]), min_size=1, max_size=4
)


@settings(max_examples=examples(200))
@given(errors=errors_lists, thresholds=auc_thresholds)
def test_aucs_equal_their_references(errors: list[float], thresholds: list[float]) -> None:
    arr = np.array(errors, dtype=np.float64)
    sg = pose.pose_auc(errors, thresholds)
    assert sg == [float(a) for a in ref.sg_pose_auc(arr, thresholds)]
    assert all(close(a, b) for a, b in zip(sg, loops.auc_loop(errors, thresholds), strict=True))
    # LoFTR's own function always uses [5, 10, 20]
    loftr = ref.loftr_error_auc(arr, thresholds)
    assert pose.error_auc_loftr(errors, [5, 10, 20]) == [float(v) for v in loftr.values()]
    assert all(
        close(a, b)
        for a, b in zip(
            pose.error_auc_loftr(errors, [5, 10, 20]),
            pose.pose_auc(errors, [5, 10, 20]),
            strict=True,
        )
    )
    gf = pose.auc_gluefactory(errors, thresholds)
    expected = ref.GfAUCMetric(thresholds, errors).compute()
    if not errors:
        assert np.isnan(expected) and all(np.isnan(gf))
        assert np.isnan(pose.maa_gluefactory(errors, thresholds))
        return
    assert gf == [float(a) for a in expected]
    assert pose.maa_gluefactory(errors, thresholds) == float(np.mean(expected))
    assert close(pose.maa_gluefactory(errors, thresholds), loops.maa_loop(gf))


@settings(max_examples=examples(100))
@given(
    by_th=st.lists(errors_lists.filter(bool), min_size=1, max_size=6),
    auc_ths=st.sampled_from([[5, 10, 20], [1, 3, 5]]),
)
def test_best_threshold_equals_eval_poses(by_th: list[list[float]], auc_ths: list[float]) -> None:
    sweep = GLUEFACTORY_RANSAC_SWEEP[: len(by_th)]
    results = {th: {"rel_pose_error": e} for th, e in zip(sweep, by_th, strict=True)}
    summaries, best_th = ref.gf_eval_poses(results, auc_ths, "rel_pose_error")
    th, aucs, maa = pose.best_threshold_gluefactory(
        {k: v["rel_pose_error"] for k, v in results.items()}, auc_ths
    )
    assert th == best_th
    assert aucs == [summaries[f"rel_pose_error@{a}°"] for a in auc_ths]
    assert maa == summaries["rel_pose_error_mAA"]


def test_best_threshold_tie_goes_to_the_first() -> None:
    same = [1.0, 2.0, 30.0]
    by_th = {1.5: same, 0.5: list(same), 2.0: [40.0]}
    th, _, _ = pose.best_threshold_gluefactory(by_th, [5, 10, 20])
    results = {k: {"e": v} for k, v in by_th.items()}
    assert th == 1.5 == ref.gf_eval_poses(results, [5, 10, 20], "e")[1]


def test_aucs_by_hand() -> None:
    # errors 0, 2.5, 7.5, inf: recall 1/4, 1/2, 3/4 at them (the failure only counts in n).
    # At 5: trapezoids (0,0)-(0,1/4)-(2.5,1/2) = 0.9375, then flat 1/2 to 5: 1.25 -> 2.1875/5
    # At 10: 0.9375 + (7.5-2.5)(1/2+3/4)/2 = 3.125, flat 3/4 for 2.5: 1.875 -> 5.9375/10
    # At 20: 0.9375 + 3.125 + 12.5 * 3/4 = 13.4375 -> /20
    e = [0.0, 2.5, 7.5, INF]
    assert pose.pose_auc(e, [5, 10, 20]) == [0.4375, 0.59375, 0.671875]
    assert pose.error_auc_loftr(e, [5, 10, 20]) == [0.4375, 0.59375, 0.671875]
    # glue-factory rounds to 4 decimals, half to even on the binary value: 0.59375 -> 0.5938
    assert pose.auc_gluefactory(e, [5, 10, 20]) == [0.4375, 0.5938, 0.6719]
    assert pose.maa_gluefactory(e, [5, 10, 20]) == pytest.approx((0.4375 + 0.5938 + 0.6719) / 3)
    # an error equal to the threshold adds no area: the curve reaches it at t
    # ((0,0)-(4,1): 2, then flat at 1: 1, over 5)
    assert pose.pose_auc([5.0], [5]) == [0.0] and pose.pose_auc([4.0], [5]) == [0.6]
    # no pairs: SuperGlue's and LoFTR's 0, glue-factory's NaN
    assert pose.pose_auc([], [5]) == [0.0] == pose.error_auc_loftr([], [5])
    assert np.isnan(pose.auc_gluefactory([], [5])[0])
    for bad in ([math.nan], [-1.0]):
        with pytest.raises(InvalidInput, match="errors"):
            pose.pose_auc(bad, [5])
    with pytest.raises(InvalidInput, match="threshold"):
        pose.pose_auc([1.0], [0])


# -------------------------------------------------------------------------- IMC mAA


@settings(max_examples=examples(200))
@given(
    pairs=st.lists(
        st.tuples(
            st.one_of(st.floats(0, 12), st.sampled_from([0.0, 1.0, 3.0, 9.0, 10.0, INF])),
            st.one_of(st.floats(0, 12), st.sampled_from([0.0, 5.0, 10.0, INF])),
        ),
        max_size=50,
    )
)
def test_imc_maa_equals_compute_qt_auc(pairs: list[tuple[float, float]]) -> None:
    errors = [max(q, t) for q, t in pairs]
    qt_acc, auc05, auc10 = ref.imc_qt_auc(pairs)
    assert pose.accuracy_imc(errors) == [float(a) for a in qt_acc]
    assert pose.maa_imc(errors, up_to=5) == float(auc05)
    assert pose.maa_imc(errors) == float(auc10)
    assert all(
        close(a, b)
        for a, b in zip(pose.accuracy_imc(errors), loops.imc_accuracy_loop(errors), strict=True)
    )


def test_imc_maa_by_hand() -> None:
    # bins [k-1, k): an error of exactly 3 is accurate from 4 degrees; exactly 10 at 10
    acc = pose.accuracy_imc([3.0, 10.0])
    assert acc == [0.0, 0.0, 0.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 1.0]
    assert pose.maa_imc([3.0, 10.0]) == pytest.approx(4.0 / 10)
    assert pose.maa_imc([]) == 0.0
    assert pose.maa_imc([INF]) == 0.0


# ---------------------------------------------------------------- homography corner error


def _homographies(seed: int, p: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    h_true = np.eye(3) + rng.normal(
        scale=[[0.1, 0.1, 20], [0.1, 0.1, 20], [1e-4, 1e-4, 0]], size=(p, 3, 3)
    )
    h_est = h_true + rng.normal(
        scale=[[1e-3, 1e-3, 1], [1e-3, 1e-3, 1], [1e-6, 1e-6, 1e-3]], size=(p, 3, 3)
    )
    return h_est, h_true


@settings(max_examples=examples(100))
@given(seed=st.integers(0, 2**32 - 1), p=st.integers(1, 20))
def test_corner_error_equals_gluefactory(seed: int, p: int) -> None:
    h_est, h_true = _homographies(seed, p)
    size = np.array([640.0, 480.0])
    got = pose.homography_corner_errors(h_est, h_true, 640, 480)
    for i in range(p):
        expected = float(ref.gf_homography_corner_error(h_est[i], h_true[i], size))
        assert close(float(got[i]), expected)
        slow = loops.corner_error_loop(h_est[i].tolist(), h_true[i].tolist(), 640.0, 480.0)
        assert close(float(got[i]), slow)
    errs = got.tolist()
    assert pose.homography_auc(errs) == pose.pose_auc(errs, [1, 3, 5])
    assert pose.auc_gluefactory(errs, [1, 3, 5]) == [
        float(a) for a in ref.GfAUCMetric([1, 3, 5], errs).compute()
    ]


def test_corner_error_by_hand_and_against_evalstores() -> None:
    # a 1% scale of 640 x 480: glue-factory's corners (0,0), (W,0), (W,H), (0,H) move by 0,
    # 6.4, 8, 4.8: mean 4.8. evalstore's corner_error takes pixel centres (w-1, h-1): 4.7915
    s = np.diag([1.01, 1.01, 1.0])
    assert pose.homography_corner_errors(s, np.eye(3), 640, 480)[0] == pytest.approx(4.8, rel=1e-12)
    assert corner_error(np.eye(3)[None], s[None], 640, 480)[0] == pytest.approx(
        (6.39 + 4.79 + math.hypot(6.39, 4.79)) / 4, rel=1e-12
    )
    # a translation moves every corner alike: the two agree
    t = np.array([[1.0, 0, 3], [0, 1, 4], [0, 0, 1]])
    assert pose.homography_corner_errors(t, np.eye(3), 640, 480)[0] == 5.0
    assert corner_error(np.eye(3)[None], t[None], 640, 480)[0] == 5.0
    # a failed estimate is +inf (glue-factory's error_r), a missing truth NaN
    nan = np.full((3, 3), np.nan)
    got = pose.homography_corner_errors(np.stack([nan, t]), np.stack([np.eye(3), nan]), 640, 480)
    assert got[0] == INF and np.isnan(got[1])
