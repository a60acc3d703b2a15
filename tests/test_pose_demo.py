"""The demo's pose experiment: the synthetic two-view scenes (evalstore/demo/pose_scenes.py)
and the runs the demo records from them (evalstore/demo/pose_runs.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstore import Store, demo
from evalstore import dashboards as dash
from evalstore.core.pose import estimate_pose, pose_auc, pose_errors
from evalstore.dashboards.data import query_filters
from evalstore.demo import pose_runs
from evalstore.demo.pose_scenes import (
    MATRIX_COLUMNS,
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
    assert set(MATRIX_COLUMNS) <= set(pairs)
    assert len(MATRIX_COLUMNS) == 9 + 9 + 12
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


# -- the demo's pose experiment, in a store ------------------------------------------------------


@pytest.fixture(scope="module")
def pose_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The quick demo's pose runs, ingested and evaluated as ``evalstore demo`` does."""
    path = tmp_path_factory.mktemp("pose") / "demo.duckdb"
    with Store(path) as store:
        names = pose_runs.ingest_runs(store, start=demo.START, quick=True, progress=None)
        pose_runs.evaluate_runs(store, names, progress=None)
    return path


RUNS = [f"pose/{m.name}-seed{s}" for m in pose_runs.MATCHERS for s in pose_runs.SEEDS]


def auc(path: Path, protocol: str | None = None) -> dict[tuple[str, float], float]:
    """(run, degrees) -> the stored pose_auc, evalstore's default or under ``protocol``."""
    with Store(path, read_only=True) as store:
        rows = store.con.execute(
            "select run, params, value from v_metrics where metric = 'pose_auc' and slice = ''"
        ).fetchall()
    out = {}
    for run, params, value in rows:
        given = json.loads(params)
        if given.get("protocol") == protocol:
            out[run, float(given["threshold"])] = value
    return out


@pytest.mark.slow  # ingests six runs and estimates 120 poses: a few seconds
def test_the_demo_stores_pose_auc_equal_to_superglues_loop(pose_store: Path) -> None:
    default, superglue = auc(pose_store), auc(pose_store, "superglue")
    assert sorted(default) == sorted((r, t) for r in RUNS for t in (5.0, 10.0, 20.0))
    assert superglue == default  # the same setting: the same stored estimates
    scenes = make_scenes(pose_runs.N_PAIRS_QUICK, seed=pose_runs.SCENE_SEED,
                         n_points=pose_runs.N_MATCHES)  # fmt: skip
    for matcher in pose_runs.MATCHERS:
        for seed in pose_runs.SEEDS:
            matches, _ = observe(scenes, noise_px=matcher.noise_px,
                                 outlier_ratio=matcher.outlier_ratio, seed=seed)  # fmt: skip
            # SuperGlue's match_pairs.py: estimate_pose at 1 px, max(err_t, err_R), pose_auc
            expected = pose_auc(pose_error_per_pair(scenes, matches), [5, 10, 20])
            run = f"pose/{matcher.name}-seed{seed}"
            got = [default[run, t] for t in (5.0, 10.0, 20.0)]
            assert np.allclose(got, expected, rtol=0, atol=1e-12), (run, got, expected)
    # the precise matcher with more outliers recovers the better poses, every seed
    for seed in pose_runs.SEEDS:
        assert default[f"pose/sharp-seed{seed}", 5.0] > default[f"pose/coarse-seed{seed}", 5.0]


@pytest.mark.slow
def test_the_demo_pose_runs_have_their_metrics_and_curves(pose_store: Path) -> None:
    with Store(pose_store, read_only=True) as store:
        found = store.con.execute(
            "select run, metric, count(*) from v_metrics where slice = '' and value is not null "
            "and params not like '%protocol%' group by run, metric"
        ).fetchall()
        estimates = store.con.execute(
            "select count(*), count(distinct run_id) from pose_estimates "
            "where method = 'opencv' and threshold = 1.0 and confidence = 0.99999"
        ).fetchall()[0]
        spec = dash.load_spec(dash.dashboards_dir() / "curves.toml")
        panel = next(p for p in spec.panels if p.query == "dashboards/pose_error_curves")
        curves = dash.panel_data(store, panel, query_filters(store, [], []))
    metrics = {(run, metric) for run, metric, _ in found}
    assert metrics == {(r, m) for r in RUNS for m in pose_runs.POSE_METRICS}
    assert estimates == (len(RUNS) * pose_runs.N_PAIRS_QUICK, len(RUNS))
    assert curves["run"].unique(maintain_order=True).to_list() == RUNS
    assert (curves["n_pairs"] == pose_runs.N_PAIRS_QUICK).all()
