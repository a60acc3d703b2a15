"""Protocol ``superpoint``: SuperPoint's homography estimation accuracy, against a
transcription of its ``compute_homography`` (rpautrat/SuperPoint
superpoint/evaluations/descriptor_evaluation.py @ 16be6749e317e8ee508d8ed331063c52873c74ec)
run with the real OpenCV on the same matches.

The transcribed lines (the matching before them is the user's; evalstore takes the matches)::

    H, inliers = cv2.findHomography(m_keypoints[:, [1, 0]],
                                    m_warped_keypoints[:, [1, 0]],
                                    cv2.RANSAC)
    corners = np.array([[0, 0, 1],
                        [0, shape[1] - 1, 1],
                        [shape[0] - 1, 0, 1],
                        [shape[0] - 1, shape[1] - 1, 1]])
    real_warped_corners = np.dot(corners, np.transpose(real_H))
    real_warped_corners = real_warped_corners[:, :2] / real_warped_corners[:, 2:]
    warped_corners = np.dot(corners, np.transpose(H))
    warped_corners = warped_corners[:, :2] / warped_corners[:, 2:]
    mean_dist = np.mean(np.linalg.norm(real_warped_corners - warped_corners, axis=1))
    correctness = float(mean_dist <= correctness_thresh)

``m_keypoints[:, [1, 0]]`` are (x, y) points of image 0, ``m_warped_keypoints`` of image 1,
``shape = (height, width)``. ``H`` is None when OpenCV finds no model (SuperPoint's code would
then fail; evalstore counts the pair incorrect).
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import polars as pl
import pytest

from evalstore import Store
from evalstore.analysis.evaluate import evaluate

EPS = (1.0, 3.0, 5.0)


def compute_homography_correctness(
    kp0: np.ndarray, kp1: np.ndarray, real_h: np.ndarray, shape: tuple[int, int], thresh: float
) -> float:
    """The transcription above, from the matched (x, y) points on."""
    h, _ = cv2.findHomography(kp0, kp1, cv2.RANSAC)
    if h is None:
        return 0.0
    corners = np.array(
        [[0, 0, 1], [0, shape[1] - 1, 1], [shape[0] - 1, 0, 1], [shape[0] - 1, shape[1] - 1, 1]]
    )
    real_warped_corners = np.dot(corners, np.transpose(real_h))
    real_warped_corners = real_warped_corners[:, :2] / real_warped_corners[:, 2:]
    warped_corners = np.dot(corners, np.transpose(h))
    warped_corners = warped_corners[:, :2] / warped_corners[:, 2:]
    mean_dist = np.mean(np.linalg.norm(real_warped_corners - warped_corners, axis=1))
    return float(mean_dist <= thresh)


def _pairs(n_pairs: int, seed: int) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, tuple]]:
    """Integer keypoints (as SuperPoint's) of 240 x 320 images, matched through a random true
    homography with noise and a share of outliers: enough that RANSAC's asymmetry shows."""
    rng = np.random.default_rng(seed)
    matches, pairs, truth = [], [], {}
    for p in range(n_pairs):
        h = np.eye(3) + np.array(
            [[rng.normal(0, 0.05), rng.normal(0, 0.05), rng.normal(0, 8)],
             [rng.normal(0, 0.05), rng.normal(0, 0.05), rng.normal(0, 8)],
             [rng.normal(0, 2e-4), rng.normal(0, 2e-4), 0.0]]
        )  # fmt: skip
        n = int(rng.integers(8, 80))
        kp0 = np.stack([rng.integers(0, 320, n), rng.integers(0, 240, n)], axis=1)
        q = np.c_[kp0, np.ones(n)] @ h.T
        kp1 = np.rint(q[:, :2] / q[:, 2:] + rng.normal(0, 1.0, (n, 2)))
        bad = rng.random(n) < rng.uniform(0.1, 0.6)
        kp1[bad] = np.stack([rng.integers(0, 320, bad.sum()), rng.integers(0, 240, bad.sum())], 1)
        pid = f"p{p:03d}"
        truth[pid] = (kp0.astype(np.float64), kp1.astype(np.float64), h)
        matches += [(pid, *a, *b) for a, b in zip(kp0.tolist(), kp1.tolist(), strict=True)]
        entries = {f"h{i + 1}{j + 1}": float(h[i, j]) for i in range(3) for j in range(3)}
        pairs.append({"pair_id": pid, "width": 320, "height": 240, **entries})
    frame = pl.DataFrame(
        matches, schema=["pair_id", "x0", "y0", "x1", "y1"], orient="row"
    ).with_columns(pl.col("x0", "y0", "x1", "y1").cast(pl.Float64))
    return frame, pl.DataFrame(pairs), truth


@pytest.mark.parametrize("seed", [0, 1])
def test_superpoint_protocol_equals_compute_homography(tmp_path: Path, seed: int) -> None:
    matches, pairs, truth = _pairs(40, seed)
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest_keypoints(matches, run="sp/a", pairs=pairs, git_commit=None)
        frame = evaluate(store, ["sp/a"], protocol="superpoint", by=("pair",))
        per_pair = frame.filter(pl.col("slice") != "")
        ours = {(r["slice"], r["params"]): r["value"] for r in per_pair.iter_rows(named=True)}
    assert len(ours) == 40 * len(EPS)
    for pid, (kp0, kp1, h) in truth.items():
        for eps in EPS:
            key = (f"pair={pid}", f'{{"eps":{eps},"protocol":"superpoint"}}')
            want = compute_homography_correctness(kp0, kp1, h, (240, 320), eps)
            assert ours[key] == want, (pid, eps)


def test_the_estimate_is_made_image_0_to_1_not_inverted(tmp_path: Path) -> None:
    """The stored e is cv2.findHomography(kp0, kp1, RANSAC) itself; the inverse of the
    1 -> 0 estimate (what evalstore stored before schema 10) is another matrix."""
    matches, pairs, truth = _pairs(30, 7)
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest_keypoints(matches, run="sp/a", pairs=pairs, git_commit=None, estimate=True)
        rows = store.con.sql(
            "select pair_id, e_direction, [e11, e12, e13, e21, e22, e23, e31, e32, e33], "
            "[r11, r12, r13, r21, r22, r23, r31, r32, r33] from pairs order by pair_id"
        ).fetchall()
    differs = 0
    for pid, direction, e, r in rows:
        kp0, kp1, _ = truth[pid]
        want, _ = cv2.findHomography(kp0, kp1, cv2.RANSAC)
        assert direction == "direct"
        np.testing.assert_allclose(np.reshape(e, (3, 3)), want / want[2, 2], rtol=1e-12)
        inverse = np.linalg.inv(np.reshape(r, (3, 3)))
        differs += not np.allclose(inverse / inverse[2, 2], want / want[2, 2], rtol=1e-6)
    assert differs > 0  # RANSAC is not symmetric: some pairs' estimates differ


def test_estimates_stored_before_schema_10_give_no_value(tmp_path: Path) -> None:
    """A pair whose e is the inverse of the 1 -> 0 estimate (stored before schema 10, which
    marks it e_direction = 'inverse') is not scored as SuperPoint would score another matrix."""
    matches, pairs, _ = _pairs(4, 3)
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest_keypoints(matches, run="sp/a", pairs=pairs, git_commit=None, estimate=True)
        store.con.execute("update pairs set e_direction = 'inverse' where pair_id <> 'p000'")
        frame = evaluate(store, ["sp/a"], metrics=["homography_accuracy"], sweeps={"eps": [3.0]})
    row = frame.row(0, named=True)
    assert (row["n_lists"], row["n_skipped"]) == (1, 3)
