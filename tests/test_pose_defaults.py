"""What a keypoint run with cameras gets without being told: the pose metrics among the
task's standard ones and the leaderboard's headline, the metrics of point truth left to runs
that have it, sweep columns in numeric order, and estimates that do not depend on what the
process computed before."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from pose_scenes import scene

from evalstore import Store
from evalstore.analysis.evaluate import evaluate
from evalstore.analysis.leaderboard import leaderboard
from evalstore.core import pose
from evalstore.errors import InvalidInput
from evalstore.metrics.pose_catalogue import GLUEFACTORY_RANSAC_SWEEP, PoseRules
from evalstore.metrics.protocols import PROTOCOLS


def _cameras_only(store: Store, run: str, seed: int) -> None:
    matches, cams, _ = scene(n_pairs=4, n_matches=40, seed=seed)
    store.ingest_keypoints(matches, run=run, pairs=cams, git_commit=None)


def _homography_run(store: Store, run: str) -> None:
    xy = np.random.default_rng(0).uniform(0, 60, (10, 2)).tolist()  # x1 = x0: H = I
    matches = {"pair_id": ["p"] * 10, "x0": [p[0] for p in xy], "y0": [p[1] for p in xy],
               "x1": [p[0] for p in xy], "y1": [p[1] for p in xy]}  # fmt: skip
    pairs = pl.DataFrame({"pair_id": ["p"], **{f"h{i}{j}": [float(i == j)] for i in (1, 2, 3)
                          for j in (1, 2, 3)}, "width": [64], "height": [48]})  # fmt: skip
    store.ingest_keypoints(matches, run=run, pairs=pairs, git_commit=None)


def test_a_run_of_cameras_alone_gets_the_pose_metrics_and_no_point_metric(store: Store) -> None:
    _cameras_only(store, "m/cams", seed=1)
    _homography_run(store, "m/h")
    frame = evaluate(store, ["m/cams", "m/h"])
    by_run = {
        run: set(part["metric"]) for (run,), part in frame.group_by("run", maintain_order=True)
    }
    assert by_run["m/cams"] == {"pose_auc", "pose_error"}
    assert {"precision_at_sigma", "mma", "homography_accuracy"} <= by_run["m/h"]
    assert not by_run["m/h"] & {"pose_auc", "pose_error"}
    with pytest.raises(InvalidInput, match="none of the requested metrics applies"):
        evaluate(store, ["m/cams"], metrics=["precision_at_sigma"])


def test_the_leaderboard_heads_pose_runs_by_auc_at_5_and_orders_sweeps_as_numbers(
    store: Store,
) -> None:
    _cameras_only(store, "m/a", seed=2)
    board = leaderboard(store)
    assert any(c.startswith("keypoints pose_auc@5 ") for c in board.columns), board.columns
    named = leaderboard(store, metrics=["pose_auc"])
    at = [c.split("@")[1].split(" ")[0] for c in named.columns]
    assert at == ["5", "10", "20"], named.columns


def test_an_estimate_does_not_depend_on_what_ran_before() -> None:
    matches, cams, _ = scene(n_pairs=1, n_matches=120, seed=3, noise=1.0, outliers=0.3)
    k0 = cams.select([f"k0_{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3)]).to_numpy().reshape(3, 3)
    k1 = cams.select([f"k1_{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3)]).to_numpy().reshape(3, 3)
    p0 = matches.select("x0", "y0").to_numpy()
    p1 = matches.select("x1", "y1").to_numpy()
    first = pose.estimate_pose(p0, p1, k0, k1, 1.0)
    rng = np.random.default_rng(9)
    for _ in range(3):  # other estimates in between draw from OpenCV's random numbers
        pose.estimate_pose(rng.uniform(0, 640, (30, 2)), rng.uniform(0, 640, (30, 2)), k0, k1, 2.0)
    again = pose.estimate_pose(p0, p1, k0, k1, 1.0)
    assert first is not None and again is not None
    assert np.array_equal(first[0], again[0]) and np.array_equal(first[1], again[1])
    assert np.array_equal(first[2], again[2])


def test_pose_rules_refuse_an_auc_code_no_sql_follows() -> None:
    with pytest.raises(InvalidInput, match=r"PoseRules auc 'colmap': expected one of superglue"):
        PoseRules(auc="colmap")
    with pytest.raises(InvalidInput, match=r"ransac_thresholds \(1.0, 0.5\): .* ascending"):
        PoseRules(ransac_thresholds=(1.0, 0.5))
    assert PROTOCOLS["gluefactory"].pose is not None
    assert PROTOCOLS["gluefactory"].pose.ransac_thresholds == GLUEFACTORY_RANSAC_SWEEP
