"""The demo's pose experiment: the synthetic two-view scenes (evalstore/demo/pose_scenes.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstore.core.pose import estimate_pose, pose_errors
from evalstore.demo.pose_scenes import (
    CAMERA_COLUMNS,
    Scenes,
    back_project,
    camera_matrices,
    make_scenes,
    observe,
    project,
)
from evalstore.errors import InvalidInput
from tests.conftest import examples


def pose_error_per_pair(
    scenes: Scenes, matches: dict[str, np.ndarray], thresh: float = 1.0
) -> np.ndarray:
    """max(err_t, err_R) in degrees of SuperGlue's estimate of each pair (inf: failed)."""
    out = []
    for i, pair_id in enumerate(scenes.pair_ids):
        rows = matches["pair_id"] == pair_id
        kpts0 = np.column_stack([matches["x0"][rows], matches["y0"][rows]])
        kpts1 = np.column_stack([matches["x1"][rows], matches["y1"][rows]])
        found = estimate_pose(kpts0, kpts1, scenes.K0[i], scenes.K1[i], thresh)
        if found is None:
            out.append(np.inf)
            continue
        err_t, err_r = pose_errors(scenes.T_0to1[i], found[0], found[1])
        out.append(max(err_t, err_r))
    return np.array(out)


def test_the_same_seed_gives_the_same_scenes_and_matches() -> None:
    a, b = make_scenes(4, seed=3, n_points=30), make_scenes(4, seed=3, n_points=30)
    for name in ("K0", "K1", "T_0to1", "planes", "n_keypoints0"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    for p, q in zip(a.points0 + a.points1, b.points0 + b.points1, strict=True):
        assert np.array_equal(p, q)
    ma, pa = observe(a, noise_px=0.5, outlier_ratio=0.2, seed=1)
    mb, pb = observe(b, noise_px=0.5, outlier_ratio=0.2, seed=1)
    assert ma.keys() == mb.keys() and pa.keys() == pb.keys()
    assert all(np.array_equal(ma[k], mb[k]) for k in ma)
    assert all(np.array_equal(pa[k], pb[k]) for k in pa)


def test_another_seed_gives_other_scenes_and_the_matcher_seed_only_other_noise() -> None:
    a, b = make_scenes(3, seed=0, n_points=20), make_scenes(3, seed=1, n_points=20)
    assert not np.allclose(a.T_0to1, b.T_0to1)
    m0, p0 = observe(a, noise_px=0.5, outlier_ratio=0.1, seed=0)
    m1, p1 = observe(a, noise_px=0.5, outlier_ratio=0.1, seed=1)
    # the same pairs and cameras (runs of several seeds are paired), other noise
    assert all(np.array_equal(p0[k], p1[k]) for k in p0)
    assert np.array_equal(m0["pair_id"], m1["pair_id"])
    assert not np.allclose(m0["x1"], m1["x1"])


def test_the_pairs_table_has_the_camera_columns_of_the_scenes() -> None:
    scenes = make_scenes(5, seed=2, n_points=10)
    pairs = camera_matrices(scenes)
    assert set(CAMERA_COLUMNS) <= set(pairs)
    assert len(CAMERA_COLUMNS) == 9 + 9 + 12
    for i in range(len(scenes)):
        k0 = np.array([[pairs[f"k0_{r}{c}"][i] for c in (1, 2, 3)] for r in (1, 2, 3)])
        k1 = np.array([[pairs[f"k1_{r}{c}"][i] for c in (1, 2, 3)] for r in (1, 2, 3)])
        t = np.array([[pairs[f"t_{r}{c}"][i] for c in (1, 2, 3, 4)] for r in (1, 2, 3)])
        assert np.array_equal(k0, scenes.K0[i]) and np.array_equal(k1, scenes.K1[i])
        assert np.array_equal(t, scenes.T_0to1[i, :3])
    assert list(pairs["pair_id"]) == ["pair_0000", "pair_0001", "pair_0002", "pair_0003",
                                      "pair_0004"]  # fmt: skip
    assert (pairs["n_keypoints0"] >= 10).all()


@settings(max_examples=examples(20))
@given(
    seed=st.integers(0, 2**32 - 1),
    n_points=st.integers(5, 40),
    width=st.integers(16, 800),
    height=st.integers(16, 800),
)
def test_scene_points_are_seen_by_both_cameras_where_the_truth_says(
    seed: int, n_points: int, width: int, height: int
) -> None:
    scenes = make_scenes(2, seed=seed, n_points=n_points, width=width, height=height)
    for i in range(len(scenes)):
        T = scenes.T_0to1[i]
        R = T[:3, :3]
        assert np.allclose(R @ R.T, np.eye(3), atol=1e-12) and np.isclose(np.linalg.det(R), 1)
        assert np.array_equal(T[3], [0, 0, 0, 1])
        p0, p1 = scenes.points0[i], scenes.points1[i]
        assert p0.shape == p1.shape == (n_points, 2)
        for p in (p0, p1):
            assert ((p >= 0) & (p < (width, height))).all()
        xyz = back_project(scenes.K0[i], scenes.planes[i][scenes.plane_of[i]], p0)
        again, depth = project(scenes.K1[i], T, xyz)
        assert (xyz[:, 2] > 0).all() and (depth > 0).all()
        assert np.allclose(again, p1, rtol=0, atol=1e-8)
        # the epipolar constraint x1^T K1^-T [t]x R K0^-1 x0 = 0 holds for every point
        t = T[:3, 3]
        tx = np.array([[0, -t[2], t[1]], [t[2], 0, -t[0]], [-t[1], t[0], 0]])
        F = np.linalg.inv(scenes.K1[i]).T @ tx @ R @ np.linalg.inv(scenes.K0[i])
        h0, h1 = np.column_stack([p0, np.ones(n_points)]), np.column_stack([p1, np.ones(n_points)])
        assert np.allclose(np.einsum("ij,jk,ik->i", h1, F, h0), 0, atol=1e-9)


def test_noise_free_matches_have_their_truth_and_outliers_do_not() -> None:
    scenes = make_scenes(3, seed=0, n_points=40)
    matches, _ = observe(scenes, noise_px=0.0, outlier_ratio=0.25, seed=0)
    off = np.hypot(matches["x1"] - matches["gt_x1"], matches["y1"] - matches["gt_y1"])
    for pair_id in scenes.pair_ids:
        rows = matches["pair_id"] == pair_id
        assert rows.sum() == 40
        # 10 outliers a pair (a uniform draw lands within 1e-6 px of the truth: never)
        assert (off[rows] > 1e-6).sum() == 10
        assert (off[rows] < 1e-9).sum() == 30


def test_the_true_pose_is_recovered_from_noise_free_matches() -> None:
    scenes = make_scenes(20, seed=0, n_points=100)
    matches, _ = observe(scenes, noise_px=0.0, outlier_ratio=0.0, seed=0)
    errors = pose_error_per_pair(scenes, matches)
    assert errors.max() < 1e-5, errors.max()  # about 1e-6 degrees at most


@pytest.mark.slow  # RANSAC's 1,000 iterations on most pairs: 2-3 s
def test_noise_and_outliers_raise_the_pose_error() -> None:
    scenes = make_scenes(8, seed=0, n_points=40)
    exact = pose_error_per_pair(scenes, observe(scenes, noise_px=0, outlier_ratio=0, seed=0)[0])
    noisy = pose_error_per_pair(scenes, observe(scenes, noise_px=1, outlier_ratio=0, seed=0)[0])
    wrong = pose_error_per_pair(scenes, observe(scenes, noise_px=0, outlier_ratio=0.85, seed=0)[0])
    assert np.median(exact) < 1e-5 < 0.1 < np.median(noisy)
    # most matches outliers: RANSAC's 1,000 iterations find no clean sample for most pairs
    assert np.median(wrong) > 5 * np.median(noisy)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: make_scenes(0), "n_pairs must be at least 1"),
        (lambda: make_scenes(1, n_points=4), "n_points must be at least 5"),
        (lambda: make_scenes(1, width=8), "at least 16 px"),
        (
            lambda: observe(make_scenes(1, n_points=5), noise_px=-1, outlier_ratio=0, seed=0),
            "noise_px must be",
        ),
        (
            lambda: observe(make_scenes(1, n_points=5), noise_px=0, outlier_ratio=1.5, seed=0),
            "outlier_ratio must be in",
        ),
    ],
)
def test_bad_arguments_raise_one_line_errors(call: object, message: str) -> None:
    with pytest.raises(InvalidInput, match=message) as caught:
        call()  # type: ignore[operator]
    assert "\n" not in str(caught.value)
