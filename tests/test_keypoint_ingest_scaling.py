"""Keypoint ingest is linear in the matches: the time per match does not grow with the number of
pairs (issue 15: a scan of every match once per pair made 1e4 pairs take hours)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from evalstore import Store
from evalstore.core import geometry

MATCHES_PER_PAIR = 100


def matches(n_pairs: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    pair = np.repeat(np.arange(n_pairs), MATCHES_PER_PAIR)
    rng.shuffle(pair)  # pairs interleaved, as a matcher writing in any order would
    x0, y0 = rng.uniform(0, 640, pair.size), rng.uniform(0, 480, pair.size)
    return {"pair_id": pair, "x0": x0, "y0": y0, "x1": x0 + 3, "y1": y0 - 2}


def seconds_per_match(tmp_path: Path, n_pairs: int) -> float:
    data = matches(n_pairs)
    # the truth from every pair's homography: the vectorised transfer is timed too
    h = {f"h{i}{j}": np.full(n_pairs, float(i == j)) for i in (1, 2, 3) for j in (1, 2, 3)}
    pairs = {"pair_id": np.arange(n_pairs), **h}
    best = np.inf
    for i in range(3):
        with Store(tmp_path / f"{n_pairs}-{i}.duckdb") as store:
            t0 = time.perf_counter()
            store.ingest_keypoints(data, pairs=pairs, run="r", git_commit=None)
            best = min(best, time.perf_counter() - t0)
    return best / (n_pairs * MATCHES_PER_PAIR)


@pytest.mark.slow
def test_time_per_match_does_not_grow_with_the_pairs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ingest leaves the RANSAC estimates for the first metric that needs them
    # (evalstore.analysis.estimates): what is timed is the grouping, truth, checks and insert alone
    def no_estimate(*args: object, **kwargs: object) -> None:
        raise AssertionError("ingest estimated a homography")

    monkeypatch.setattr(geometry, "estimate_homography", no_estimate)
    small = seconds_per_match(tmp_path, 1_000)
    large = seconds_per_match(tmp_path, 10_000)
    # linear: about 1x (below 1 while the fixed cost of a store weighs on the small run);
    # the scan per pair gave 7.7x here
    assert large / small < 3, f"{large / small:.1f}x the time per match at 10x the pairs"
