"""Random keypoint runs with cameras and stored pose estimates, for the pose metrics' tests:
pairs seen by two pinhole cameras (random intrinsics, a rotation up to 30 degrees, a nonzero
translation), matches that are projections of 3-D points with some pixel noise (so that some
are within the epipolar thresholds and some are not), and the estimates of every pair at each
RANSAC threshold of glue-factory's sweep (and a decoy at another confidence), with errors drawn
from values on the AUC thresholds, failures (+inf) and others. The estimates are written into
``pose_estimates`` directly: the metrics are arithmetic over them, whatever RANSAC made.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
from hypothesis import strategies as st

from evalstore import Store
from evalstore.analysis.pose_estimates import METHODS

K_COLUMNS = [f"k{c}_{i}{j}" for c in (0, 1) for i in (1, 2, 3) for j in (1, 2, 3)]
T_COLUMNS = [f"t_{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3, 4)]
RANSAC = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0)
ERRORS = (0.0, 0.5, 1.0, 2.5, 5.0, 7.5, 10.0, 12.0, 20.0, 45.0, 90.0, math.inf)
NOISE = (0.0, 0.001, 0.01, 0.3, 5.0)

Choose = Callable[[tuple[Any, ...]], Any]


def rotation(axis: np.ndarray, degrees: float) -> np.ndarray:
    """The rotation by ``degrees`` about ``axis`` (Rodrigues)."""
    a = axis / np.linalg.norm(axis)
    s = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    th = np.deg2rad(degrees)
    return np.eye(3) + np.sin(th) * s + (1 - np.cos(th)) * s @ s


def _pose_run(choose: Choose, uniform: Callable[[float, float], float]) -> dict[str, Any]:
    pairs = []
    for p in range(choose((1, 2, 3, 4, 5))):
        k0, k1 = (np.array([[uniform(80, 500), 0, uniform(0, 100)],
                            [0, uniform(80, 500), uniform(0, 80)], [0, 0, 1.0]])
                  for _ in range(2))  # fmt: skip
        axis = np.array([uniform(-1, 1), uniform(-1, 1), 1.0])
        r = rotation(axis, uniform(0, 30))
        t = np.array([uniform(-1, 1), uniform(-1, 1), choose((0.5, -0.3, 1.0))])
        matches = []
        for _ in range(choose((1, 2, 5, 8)) if p == 0 else choose((0, 1, 4, 8))):
            x = np.array([uniform(-1, 1), uniform(-1, 1), 1.0]) * uniform(2, 6)
            u0 = k0 @ x
            u1 = k1 @ (r @ x + t)
            noise = choose(NOISE)
            matches.append((u0[0] / u0[2], u0[1] / u0[2],
                            u1[0] / u1[2] + noise * uniform(-1, 1),
                            u1[1] / u1[2] + noise * uniform(-1, 1)))  # fmt: skip
        extra = choose((None, 0, 3, 20))
        estimates = []
        for th in RANSAC:
            pick = lambda: choose(ERRORS) if choose((True, False)) else uniform(0, 30)  # noqa: E731
            estimates.append((th, 0.99999, float(pick()), float(pick())))
        estimates.append((1.0, 0.999, float(choose(ERRORS)), 0.0))  # a decoy: another setting
        pairs.append({
            "pair_id": f"p{p}", "k0": k0, "k1": k1, "t": np.column_stack([r, t]),
            "n_keypoints0": None if extra is None else len(matches) + extra,
            "matches": matches, "estimates": estimates,
        })  # fmt: skip
    return {"pairs": pairs}


@st.composite
def pose_runs(draw: Any) -> dict[str, Any]:
    """A run of 1..5 pairs with cameras (hypothesis)."""
    return _pose_run(
        lambda xs: draw(st.sampled_from(xs)),
        lambda lo, hi: draw(st.floats(lo, hi, allow_nan=False, allow_infinity=False)),
    )


def seeded_pose_run(rng: np.random.Generator) -> dict[str, Any]:
    """A run of :func:`pose_runs`' kind from a seeded generator."""
    return _pose_run(lambda xs: xs[int(rng.integers(len(xs)))], lambda lo, hi: rng.uniform(lo, hi))


def ingest_pose_run(store: Store, data: dict[str, Any], run: str) -> int:
    """Store the run (matches, pairs with their cameras) and write its estimates."""
    rows = [(p["pair_id"], *m) for p in data["pairs"] for m in p["matches"]]
    matches = pl.DataFrame(rows, schema=["pair_id", "x0", "y0", "x1", "y1"], orient="row")
    cams: dict[str, Any] = {"pair_id": [p["pair_id"] for p in data["pairs"]]}
    values = [[*p["k0"].ravel(), *p["k1"].ravel(), *p["t"].ravel()] for p in data["pairs"]]
    for k, name in enumerate([*K_COLUMNS, *T_COLUMNS]):
        cams[name] = [float(v[k]) for v in values]
    cams["n_keypoints0"] = pl.Series([p["n_keypoints0"] for p in data["pairs"]], dtype=pl.Int64)
    run_id = store.ingest_keypoints(matches, run=run, pairs=pl.DataFrame(cams), git_commit=None)
    for p in data["pairs"]:
        # each estimator's (a protocol's rules name theirs), the same errors
        for method, (th, conf, err_t, err_r) in itertools.product(sorted(METHODS), p["estimates"]):
            store.con.execute(  # test-only: the estimates the metrics read, as stated
                "insert into pose_estimates (run_id, pair_no, method, threshold, confidence,"
                " err_t, err_r, n_inliers) select run_id, pair_no, $method, $th, $conf, $et,"
                " $er, 0 from pairs where run_id = $run and pair_id = $pair",
                {"run": run_id.run_id, "pair": p["pair_id"], "th": th, "conf": conf,
                 "et": err_t, "er": err_r, "method": method},
            )  # fmt: skip
    return int(run_id.run_id)
