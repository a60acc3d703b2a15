"""Synthetic two-view scenes with known cameras, for the relative pose metrics.

:func:`make_scenes` makes image pairs the way MegaDepth-1500 and ScanNet-1500 give them to a
matcher's evaluation: two cameras with their own intrinsics ``K0``, ``K1`` and the true
relative pose ``T_0to1`` (image 0's camera frame to image 1's: ``X1 = R X0 + t``), and a set
of scene points seen by both. Each scene is a few planes at several depths in front of camera
0, tilted at random; the points are pixels drawn uniformly in image 0, back-projected onto
one of the planes and projected into camera 1, which stands a baseline away and looks at the
planes' centre (so most points are seen by both). Points that fall outside image 1 or behind
camera 1 are drawn again.

:func:`observe` is a simulated matcher on those scenes: each scene point's two projections
with Gaussian pixel noise (``noise_px``, each coordinate of both images) and a share of
outliers (``outlier_ratio``: the match's point in image 1 replaced by a uniform draw over the
image). Its output is a matches table and a pairs table ready for
``Store.ingest_keypoints(matches, pairs=pairs)``: the matches have the ground truth of each
(noisy) point of image 0 (``gt_x1``, ``gt_y1``: where its back-projection onto its plane lands
in image 1), the pairs have the cameras as the columns ``k0_11..k0_33``, ``k1_11..k1_33``,
``t_11..t_34`` and ``n_keypoints0``.

The scenes depend on their ``seed`` only; the matcher's noise and outliers on the scenes'
seed and its own, so runs with several matcher seeds are paired pair by pair (the same
``pair_id``, the same cameras). Everything is deterministic; no function here touches a
database or prints.

>>> scenes = make_scenes(2, seed=0, n_points=50)
>>> matches, pairs = observe(scenes, noise_px=0.0, outlier_ratio=0.0, seed=0)
>>> pairs["pair_id"].tolist(), len(matches["x0"]), bool((pairs["n_keypoints0"] >= 50).all())
(['pair_0000', 'pair_0001'], 100, True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from evalstore.errors import InvalidInput
from evalstore.metrics.pose_inputs import K0_COLUMNS, K1_COLUMNS, T_COLUMNS

__all__ = [
    "MATRIX_COLUMNS",
    "Scenes",
    "back_project",
    "camera_matrices",
    "make_scenes",
    "observe",
    "project",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Arrays = dict[str, np.ndarray]

#: The pairs table's matrix columns, as ``evalstore ingest --task keypoints --pairs`` reads
#: them: K0 and K1 row-major, then the first three rows of T_0to1 (n_keypoints0 apart).
MATRIX_COLUMNS = (*K0_COLUMNS, *K1_COLUMNS, *T_COLUMNS)

_N_PLANES = 3
_DEPTHS = (4.0, 7.0, 11.0)  # metres, in front of camera 0, each jittered by +-15 %
_MAX_TILT = 35.0  # degrees between a plane's normal and camera 0's optical axis
_BASELINE = (0.4, 1.5)  # metres between the two camera centres
_MAX_ROLL = 10.0  # degrees of camera 1 about its optical axis
_FOCAL = (0.8, 1.2)  # focal length over the image's longer side
_MIN_DEPTH = 0.1  # a point nearer camera 1 than this is not seen


@dataclass(frozen=True, eq=False)
class Scenes:
    """Image pairs with known cameras and the scene points seen by both images.

    Attributes:
        seed: the seed the scenes were made with.
        width, height: of both images, in pixels.
        pair_ids: ``pair_0000``, ``pair_0001``, ...
        K0, K1: (n, 3, 3) intrinsics.
        T_0to1: (n, 4, 4) true relative poses, ``[R | t]`` over ``[0 0 0 1]``.
        planes: (n, planes, 4) each plane ``(n_x, n_y, n_z, d)`` in camera 0's frame:
            the points X with ``n . X = d``.
        points0, points1: per pair, (m, 2) the scene points' exact projections in each image.
        plane_of: per pair, (m,) the plane each point lies on.
        n_keypoints0: (n,) keypoints "detected" in image 0: the m matched ones and some
            without a correspondent (SuperGlue's matching score divides by it).
    """

    seed: int
    width: int
    height: int
    pair_ids: list[str]
    K0: FloatArray
    K1: FloatArray
    T_0to1: FloatArray
    planes: FloatArray
    points0: list[FloatArray]
    points1: list[FloatArray]
    plane_of: list[IntArray]
    n_keypoints0: IntArray

    def __len__(self) -> int:
        return len(self.pair_ids)


def _rotation(axis: FloatArray, degrees: float) -> FloatArray:
    """Rodrigues: the rotation by ``degrees`` about ``axis``."""
    k = axis / np.linalg.norm(axis)
    a = np.deg2rad(degrees)
    cross = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + np.sin(a) * cross + (1.0 - np.cos(a)) * (cross @ cross)


def _intrinsics(rng: np.random.Generator, width: int, height: int) -> FloatArray:
    f = rng.uniform(*_FOCAL) * max(width, height)
    cx = width / 2 + rng.uniform(-0.02, 0.02) * width
    cy = height / 2 + rng.uniform(-0.02, 0.02) * height
    return np.array([[f, 0.0, cx], [0.0, f, cy], [0.0, 0.0, 1.0]])


def _planes(rng: np.random.Generator) -> FloatArray:
    """``_N_PLANES`` planes ``(normal, d)`` facing camera 0 at the depths ``_DEPTHS``."""
    out = np.empty((_N_PLANES, 4))
    for k in range(_N_PLANES):
        tilt = rng.uniform(0.0, _MAX_TILT)
        axis = np.array([*rng.normal(size=2), 0.0])
        normal = _rotation(axis, tilt) @ np.array([0.0, 0.0, 1.0])
        depth = _DEPTHS[k % len(_DEPTHS)] * rng.uniform(0.85, 1.15)
        out[k] = (*normal, depth * normal[2])  # the plane meets the optical axis at `depth`
    return out


def _pose(rng: np.random.Generator, target: FloatArray) -> FloatArray:
    """T_0to1 of a camera a baseline from camera 0 that looks at ``target`` (camera 0's
    frame), rolled a little about its optical axis."""
    direction = rng.normal(size=3) * np.array([1.0, 0.5, 0.3])  # mostly sideways
    centre = direction / np.linalg.norm(direction) * rng.uniform(*_BASELINE)
    forward = (target - centre) / np.linalg.norm(target - centre)
    right = np.cross(np.array([0.0, 1.0, 0.0]), forward)  # y points down in a camera frame
    right /= np.linalg.norm(right)
    down = np.cross(forward, right)
    rotation = _rotation(forward, rng.uniform(-_MAX_ROLL, _MAX_ROLL)).T @ np.stack(
        [right, down, forward]
    )
    T = np.eye(4)
    T[:3, :3] = rotation
    T[:3, 3] = -rotation @ centre
    return T


def back_project(K: FloatArray, plane: FloatArray, xy: FloatArray) -> FloatArray:
    """(m, 3): the points of ``plane`` (``(normal, d)`` per row of ``plane``, or one for all)
    that camera 0 (intrinsics ``K``, at the origin) sees at the pixels ``xy`` (m, 2)."""
    rays = np.linalg.solve(K, np.column_stack([xy, np.ones(len(xy))]).T).T
    plane = np.broadcast_to(plane, (len(xy), 4))
    scale = plane[:, 3] / np.einsum("ij,ij->i", rays, plane[:, :3])
    return rays * scale[:, None]


def project(K: FloatArray, T: FloatArray, points: FloatArray) -> tuple[FloatArray, FloatArray]:
    """((m, 2) pixels, (m,) depths) of camera 0's points in the camera ``T`` (from camera 0's
    frame) with intrinsics ``K``."""
    cam = points @ T[:3, :3].T + T[:3, 3]
    pix = cam @ K.T
    with np.errstate(divide="ignore", invalid="ignore"):
        xy = pix[:, :2] / pix[:, 2:3]
    return xy, cam[:, 2]


def _seen_points(
    rng: np.random.Generator,
    K0: FloatArray,
    K1: FloatArray,
    T: FloatArray,
    planes: FloatArray,
    n_points: int,
    size: tuple[int, int],
) -> tuple[FloatArray, FloatArray, IntArray]:
    """``n_points`` points seen in both images: (xy0, xy1, the plane of each)."""
    width, height = size
    xy0s, xy1s, which = [], [], []
    found = drawn = 0
    while found < n_points:
        if drawn > 50 * n_points:  # camera 1 looks at the planes: never, whatever the seed
            raise RuntimeError("the two cameras of a scene see too few common points")
        m = n_points
        xy0 = rng.uniform((0.0, 0.0), (width, height), size=(m, 2))
        plane = rng.integers(len(planes), size=m)
        xyz = back_project(K0, planes[plane], xy0)
        xy1, depth = project(K1, T, xyz)
        ok = (
            (xyz[:, 2] > _MIN_DEPTH)
            & (depth > _MIN_DEPTH)
            & (xy1[:, 0] >= 0)
            & (xy1[:, 0] < width)
            & (xy1[:, 1] >= 0)
            & (xy1[:, 1] < height)
        )
        keep = np.flatnonzero(ok)[: n_points - found]
        xy0s.append(xy0[keep])
        xy1s.append(xy1[keep])
        which.append(plane[keep])
        found += keep.size
        drawn += m
    return np.concatenate(xy0s), np.concatenate(xy1s), np.concatenate(which)


def make_scenes(
    n_pairs: int, *, seed: int = 0, n_points: int = 200, width: int = 640, height: int = 480
) -> Scenes:
    """``n_pairs`` two-view scenes, each with ``n_points`` points seen by both cameras.

    Each pair: its own intrinsics ``K0`` and ``K1`` (focal length 0.8-1.2 times the longer
    side, principal point within 2 % of the centre), 3 planes meeting camera 0's optical axis
    at about 4, 7 and 11 m, tilted up to 35 degrees, camera 1 0.4-1.5 m away (mostly sideways)
    looking at the middle plane's centre, rolled up to 10 degrees. ``n_keypoints0`` adds to
    the ``n_points`` seen by both a quarter to a half as many keypoints of image 0 without a
    correspondent.

    Raises:
        InvalidInput: ``n_pairs`` below 1, ``n_points`` below 5, an image side below 16.
    """
    if n_pairs < 1:
        raise InvalidInput(f"n_pairs must be at least 1, got {n_pairs}")
    if n_points < 5:
        raise InvalidInput(f"n_points must be at least 5 (the five-point solver), got {n_points}")
    if min(width, height) < 16:
        raise InvalidInput(f"images must be at least 16 px a side, got {width} x {height}")
    rng = np.random.default_rng([seed, 0])
    K0 = np.empty((n_pairs, 3, 3))
    K1 = np.empty((n_pairs, 3, 3))
    T = np.empty((n_pairs, 4, 4))
    planes = np.empty((n_pairs, _N_PLANES, 4))
    points0, points1, plane_of = [], [], []
    n_keypoints0 = np.empty(n_pairs, np.int64)
    for i in range(n_pairs):
        K0[i] = _intrinsics(rng, width, height)
        K1[i] = _intrinsics(rng, width, height)
        planes[i] = _planes(rng)
        middle = planes[i, 1]
        T[i] = _pose(rng, np.array([0.0, 0.0, middle[3] / middle[2]]))
        xy0, xy1, which = _seen_points(
            rng, K0[i], K1[i], T[i], planes[i], n_points, (width, height)
        )
        points0.append(xy0)
        points1.append(xy1)
        plane_of.append(which)
        n_keypoints0[i] = n_points + rng.integers(n_points // 4, n_points // 2 + 1)
    return Scenes(
        seed=seed,
        width=width,
        height=height,
        pair_ids=[f"pair_{i:04d}" for i in range(n_pairs)],
        K0=K0,
        K1=K1,
        T_0to1=T,
        planes=planes,
        points0=points0,
        points1=points1,
        plane_of=plane_of,
        n_keypoints0=n_keypoints0,
    )


def camera_matrices(scenes: Scenes) -> Arrays:
    """The pairs table: ``pair_id``, :data:`MATRIX_COLUMNS`, ``n_keypoints0``, ``width``,
    ``height``."""
    n = len(scenes)
    out: Arrays = {"pair_id": np.array(scenes.pair_ids)}
    for name, matrix in (("k0", scenes.K0), ("k1", scenes.K1)):
        for i in range(3):
            for j in range(3):
                out[f"{name}_{i + 1}{j + 1}"] = matrix[:, i, j].copy()
    for i in range(3):
        for j in range(4):
            out[f"t_{i + 1}{j + 1}"] = scenes.T_0to1[:, i, j].copy()
    out["n_keypoints0"] = scenes.n_keypoints0.copy()
    out["width"] = np.full(n, scenes.width, np.int64)
    out["height"] = np.full(n, scenes.height, np.int64)
    return out


def observe(
    scenes: Scenes, *, noise_px: float, outlier_ratio: float, seed: int
) -> tuple[Arrays, Arrays]:
    """A simulated matcher's matches of every pair of ``scenes``: ``(matches, pairs)``.

    Each scene point is a match: both projections with Gaussian noise of ``noise_px`` pixels
    (standard deviation, each coordinate), then ``round(outlier_ratio * m)`` of the m matches
    of a pair (drawn at random) get a point of image 1 drawn uniformly over the image. The
    matches keep the scene's order.

    Returns:
        ``matches``: ``pair_id``, ``x0``, ``y0``, ``x1``, ``y1``, ``gt_x1``, ``gt_y1`` (the
        point of image 0 back-projected onto its plane and projected into image 1);
        ``pairs``: as :func:`camera_matrices`.

    Raises:
        InvalidInput: ``noise_px`` negative or not finite, ``outlier_ratio`` outside [0, 1].
    """
    if not (np.isfinite(noise_px) and noise_px >= 0):
        raise InvalidInput(f"noise_px must be a finite number >= 0, got {noise_px}")
    if not 0.0 <= outlier_ratio <= 1.0:
        raise InvalidInput(f"outlier_ratio must be in [0, 1], got {outlier_ratio}")
    rng = np.random.default_rng([scenes.seed, seed, 1])
    cols: dict[str, list[np.ndarray]] = {
        k: [] for k in ("pair_id", "x0", "y0", "x1", "y1", "gt_x1", "gt_y1")
    }
    size = (scenes.width, scenes.height)
    for i, pair_id in enumerate(scenes.pair_ids):
        p0, p1 = scenes.points0[i], scenes.points1[i]
        m = len(p0)
        xy0 = p0 + rng.normal(0.0, noise_px, (m, 2)) if noise_px > 0 else p0.copy()
        xy1 = p1 + rng.normal(0.0, noise_px, (m, 2)) if noise_px > 0 else p1.copy()
        n_out = round(outlier_ratio * m)
        if n_out:
            wrong = rng.choice(m, n_out, replace=False)
            xy1[wrong] = rng.uniform((0.0, 0.0), size, size=(n_out, 2))
        xyz = back_project(scenes.K0[i], scenes.planes[i][scenes.plane_of[i]], xy0)
        gt, _ = project(scenes.K1[i], scenes.T_0to1[i], xyz)
        cols["pair_id"].append(np.full(m, pair_id))
        cols["x0"].append(xy0[:, 0])
        cols["y0"].append(xy0[:, 1])
        cols["x1"].append(xy1[:, 0])
        cols["y1"].append(xy1[:, 1])
        cols["gt_x1"].append(gt[:, 0])
        cols["gt_y1"].append(gt[:, 1])
    matches = {k: np.concatenate(v) for k, v in cols.items()}
    return matches, camera_matrices(scenes)
