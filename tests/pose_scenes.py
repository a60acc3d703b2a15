"""Image pairs with cameras for the pose tests: random 3-D points seen by two pinhole cameras,
the matches their projections (with pixel noise and a share of outliers), the cameras as the
columns of ``--pairs`` (k0_11..k0_33, k1_11..k1_33, t_11..t_34)."""

from __future__ import annotations

import numpy as np
import polars as pl

K_COLUMNS = [f"k{c}_{i}{j}" for c in (0, 1) for i in (1, 2, 3) for j in (1, 2, 3)]
T_COLUMNS = [f"t_{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3, 4)]


def rotation(axis: np.ndarray, degrees: float) -> np.ndarray:
    """The rotation by ``degrees`` about ``axis`` (Rodrigues)."""
    a = axis / np.linalg.norm(axis)
    s = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    th = np.deg2rad(degrees)
    return np.eye(3) + np.sin(th) * s + (1 - np.cos(th)) * s @ s


def intrinsics(f: float, cx: float, cy: float) -> np.ndarray:
    return np.array([[f, 0, cx], [0, f, cy], [0, 0, 1.0]])


def scene(
    n_pairs: int = 3,
    n_matches: int = 80,
    *,
    seed: int = 0,
    noise: float = 0.5,
    outliers: float = 0.1,
) -> tuple[pl.DataFrame, pl.DataFrame, list[np.ndarray]]:
    """(matches, cameras, T_0to1 per pair): pairs ``p0..`` with ``n_matches`` matches each,
    the cameras frame with pair_id and the camera columns, and each pair's true 4 x 4 pose."""
    rng = np.random.default_rng(seed)
    rows: dict[str, list[object]] = {c: [] for c in ("pair_id", "x0", "y0", "x1", "y1")}
    cams: dict[str, list[float | str]] = {c: [] for c in ("pair_id", *K_COLUMNS, *T_COLUMNS)}
    poses = []
    for p in range(n_pairs):
        k0 = intrinsics(500 + 20 * p, 320, 240)
        k1 = intrinsics(480 + 10 * p, 300, 250)
        r = rotation(rng.normal(size=3), rng.uniform(5, 15))
        t = rng.normal(size=3)
        t = 0.5 * t / np.linalg.norm(t)
        pts = np.column_stack([rng.uniform(-2, 2, n_matches), rng.uniform(-1.5, 1.5, n_matches),
                               rng.uniform(4, 8, n_matches)])  # fmt: skip
        u0 = (k0 @ pts.T).T
        u1 = (k1 @ (r @ pts.T + t[:, None])).T
        xy0 = u0[:, :2] / u0[:, 2:]
        xy1 = u1[:, :2] / u1[:, 2:] + rng.normal(0, noise, (n_matches, 2))
        bad = rng.random(n_matches) < outliers
        xy1[bad] = rng.uniform(0, 640, (int(bad.sum()), 2))
        rows["pair_id"] += [f"p{p}"] * n_matches
        for k, c in enumerate(("x0", "y0")):
            rows[c] += xy0[:, k].tolist()
        for k, c in enumerate(("x1", "y1")):
            rows[c] += xy1[:, k].tolist()
        cams["pair_id"].append(f"p{p}")
        for c, v in zip(K_COLUMNS, [*k0.ravel(), *k1.ravel()], strict=True):
            cams[c].append(float(v))
        pose = np.eye(4)
        pose[:3, :3], pose[:3, 3] = r, t
        for c, v in zip(T_COLUMNS, pose[:3].ravel(), strict=True):
            cams[c].append(float(v))
        poses.append(pose)
    return pl.DataFrame(rows), pl.DataFrame(cams), poses
