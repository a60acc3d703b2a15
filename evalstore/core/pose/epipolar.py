"""The symmetric epipolar distance of matches under the true relative pose, and the per-pair
precision and matching score SuperGlue's evaluation derives from it.

SuperGlue's ``compute_epipolar_error`` (magicleap/SuperGluePretrainedNetwork
``models/utils.py`` @ ddcf11f42e7e0732a0c4607648f9448ea8d73590), the same arithmetic as
LoFTR's ``symmetric_epipolar_distance`` (zju3dv/LoFTR ``src/utils/metrics.py`` @
df7ca80f917334b94cfbe32cc2901e09a80e70a8, in torch): the points normalised by the intrinsics
(``(p - c) / f``), ``E = [t]x R`` of the true ``T_0to1``, and per match::

    d = (p1' E p0)^2 * (1 / ((E p0)_x^2 + (E p0)_y^2) + 1 / ((E^T p1)_x^2 + (E^T p1)_y^2))

a squared distance in normalised coordinates (no unit: 5e-4 is SuperGlue's and LoFTR's
ScanNet threshold, 1e-4 LoFTR's MegaDepth one). ``match_pairs.py`` then takes, per pair,
``correct = d < threshold``, the precision ``mean(correct)`` (0 without matches) and the
matching score ``sum(correct) / len(kpts0)`` (0 without keypoints; ``kpts0`` is every
keypoint detected in image 0, matched or not).

glue-factory's epipolar precision (``eval_matches_epipolar``, ``epi_prec@1e-4``, ``@5e-4``,
``@1e-3``) thresholds another distance, :func:`epipolar_errors_gluefactory`: the mean of the
two point-to-line distances, not squared, its denominators clamped; the same thresholds are
not the same test.

A match whose epipolar lines degenerate (``E = 0`` for a true translation of 0, or a point on
an epipole) has a NaN or infinite distance, computed without a warning: NaN is never < the
threshold, so it is incorrect, as in the reference.

>>> import numpy as np
>>> T = np.eye(4); T[:3, 3] = (1.0, 0.0, 0.0)  # a sideways step: epipolar lines are rows
>>> K = np.array([[100.0, 0, 50], [0, 100.0, 50], [0, 0, 1]])
>>> epipolar_errors([[10.0, 20.0], [10.0, 20.0]], [[30.0, 20.0], [30.0, 21.0]], T, K, K)
array([0.    , 0.0002])
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from evalstore.errors import InvalidInput

__all__ = [
    "EPIPOLAR_THRESHOLD",
    "epipolar_errors",
    "epipolar_errors_gluefactory",
    "epipolar_precision",
    "matching_score",
]

ArrayLike = npt.ArrayLike
FloatArray = npt.NDArray[np.float64]

#: SuperGlue's threshold on the squared symmetric epipolar distance (``match_pairs.py``)
EPIPOLAR_THRESHOLD = 5e-4


def _matrix(value: ArrayLike, what: str, shape: tuple[int, int]) -> FloatArray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape != shape or not np.isfinite(arr).all():
        raise InvalidInput(f"{what} must be a finite {shape[0]} x {shape[1]} matrix")
    return arr


def _points(value: ArrayLike, what: str) -> FloatArray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.size == 0:
        arr = arr.reshape(0, 2)  # no matches
    if arr.ndim != 2 or arr.shape[1] != 2 or not np.isfinite(arr).all():
        raise InvalidInput(f"{what} must be finite N x 2 pixel coordinates, got {arr.shape}")
    return arr


def _inputs(
    kpts0: ArrayLike, kpts1: ArrayLike, T_0to1: ArrayLike, K0: ArrayLike, K1: ArrayLike
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    p0, p1 = _points(kpts0, "kpts0"), _points(kpts1, "kpts1")
    if p0.shape != p1.shape:
        raise InvalidInput(f"kpts0 and kpts1 must match one to one: {p0.shape} != {p1.shape}")
    T = np.asarray(T_0to1, dtype=np.float64)
    T = _matrix(T, "T_0to1", (4, 4) if T.shape == (4, 4) else (3, 4))
    return p0, p1, T, _matrix(K0, "K0", (3, 3)), _matrix(K1, "K1", (3, 3))


def epipolar_errors(
    kpts0: ArrayLike, kpts1: ArrayLike, T_0to1: ArrayLike, K0: ArrayLike, K1: ArrayLike
) -> FloatArray:
    """SuperGlue's ``compute_epipolar_error``: per match, the squared symmetric epipolar
    distance (module docstring) of ``kpts0[i] <-> kpts1[i]`` under the true pose.

    Args:
        kpts0, kpts1: the matched points, N x 2 pixel coordinates (x, y) in images 0 and 1.
        T_0to1: the true relative pose, 4 x 4 (or 3 x 4), camera 0 -> camera 1.
        K0, K1: the intrinsics, 3 x 3.

    Returns:
        (N,) distances (NaN or inf where the lines degenerate).

    Raises:
        InvalidInput: shapes that differ or are not N x 2, a matrix of the wrong shape or not
            finite.

    >>> T = np.eye(4); T[:3, 3] = (0.0, 1.0, 0.0)  # a step up: epipolar lines are columns
    >>> epipolar_errors([[0.0, 0.0]], [[3.0, 9.0]], T, np.eye(3), np.eye(3))  # 3^2 (1 + 1)
    array([18.])
    """
    p0, p1, T, k0, k1 = _inputs(kpts0, kpts1, T_0to1, K0, K1)
    # models/utils.py compute_epipolar_error, line for line
    p0 = (p0 - k0[[0, 1], [2, 2]][None]) / k0[[0, 1], [0, 1]][None]
    p1 = (p1 - k1[[0, 1], [2, 2]][None]) / k1[[0, 1], [0, 1]][None]
    p0 = np.concatenate([p0, np.ones_like(p0[:, :1])], axis=-1)  # to_homogeneous
    p1 = np.concatenate([p1, np.ones_like(p1[:, :1])], axis=-1)
    t0, t1, t2 = T[:3, 3]
    t_skew = np.array([[0, -t2, t1], [t2, 0, -t0], [-t1, t0, 0]])
    E = t_skew @ T[:3, :3]
    Ep0 = p0 @ E.T  # N x 3
    p1Ep0 = np.sum(p1 * Ep0, -1)  # N
    Etp1 = p1 @ E  # N x 3
    with np.errstate(divide="ignore", invalid="ignore"):
        d: FloatArray = p1Ep0**2 * (
            1.0 / (Ep0[:, 0] ** 2 + Ep0[:, 1] ** 2) + 1.0 / (Etp1[:, 0] ** 2 + Etp1[:, 1] ** 2)
        )
    return d


def epipolar_errors_gluefactory(
    kpts0: ArrayLike, kpts1: ArrayLike, T_0to1: ArrayLike, K0: ArrayLike, K1: ArrayLike
) -> FloatArray:
    """glue-factory's epipolar error of matches (cvg/glue-factory ``gluefactory/geometry/
    epipolar.py`` @ 2d17e3b3, ``generalized_epi_dist(..., all=False, essential=True)`` ->
    ``sym_epipolar_distance(p0, p1, E, squared=False)``): in normalised coordinates, with
    ``E = [t]x R``, ``d0 = max((E p0)_x^2 + (E p0)_y^2, 1e-6)``, ``d1`` likewise of ``E^T p1``,

        ``d = |p1' E p0| * (1 / sqrt(d0) + 1 / sqrt(d1)) / 2``

    the mean distance of each point to the other's epipolar line. The clamp makes a
    degenerate line a large finite distance (0 where ``E = 0``). Its precision is
    ``(d < th).float().mean().nan_to_num()``: :func:`epipolar_precision` of these distances
    (0 without matches).

    Args:
        kpts0, kpts1, T_0to1, K0, K1: as in :func:`epipolar_errors`.

    Returns:
        (N,) distances.

    Raises:
        InvalidInput: as :func:`epipolar_errors`.

    The step up of :func:`epipolar_errors`' example: distances 3 and 3, mean 3 (there 18):

    >>> T = np.eye(4); T[:3, 3] = (0.0, 1.0, 0.0)
    >>> epipolar_errors_gluefactory([[0.0, 0.0]], [[3.0, 9.0]], T, np.eye(3), np.eye(3))
    array([3.])
    """
    p0, p1, T, k0, k1 = _inputs(kpts0, kpts1, T_0to1, K0, K1)
    p0 = (p0 - k0[[0, 1], [2, 2]][None]) / k0[[0, 1], [0, 1]][None]  # Camera.normalize
    p1 = (p1 - k1[[0, 1], [2, 2]][None]) / k1[[0, 1], [0, 1]][None]
    p0 = np.concatenate([p0, np.ones_like(p0[:, :1])], axis=-1)  # to_homogeneous
    p1 = np.concatenate([p1, np.ones_like(p1[:, :1])], axis=-1)
    t = T[:3, 3]
    E = np.array([[0, -t[2], t[1]], [t[2], 0, -t[0]], [-t[1], t[0], 0]]) @ T[:3, :3]
    p1_E_p0 = np.einsum("ni,ij,nj->n", p1, E, p0)
    E_p0 = np.einsum("ij,nj->ni", E, p0)
    Et_p1 = np.einsum("ij,ni->nj", E, p1)
    d0 = np.maximum(E_p0[:, 0] ** 2 + E_p0[:, 1] ** 2, 1e-6)
    d1 = np.maximum(Et_p1[:, 0] ** 2 + Et_p1[:, 1] ** 2, 1e-6)
    d: FloatArray = np.abs(p1_E_p0) * (1 / np.sqrt(d0) + 1 / np.sqrt(d1)) / 2
    return d


def _distances(errors: ArrayLike) -> FloatArray:
    arr = np.asarray(errors, dtype=np.float64)
    if arr.ndim != 1:
        raise InvalidInput(f"epipolar errors must be a 1-D array, got shape {arr.shape}")
    return arr


def _threshold(threshold: float) -> float:
    if not np.isfinite(threshold) or threshold <= 0:
        raise InvalidInput(f"the epipolar threshold is finite and > 0, got {threshold}")
    return float(threshold)


def epipolar_precision(errors: ArrayLike, threshold: float = EPIPOLAR_THRESHOLD) -> float:
    """One pair's precision: the fraction of its matches with an epipolar error <
    ``threshold`` (``np.mean(correct) if len(correct) > 0 else 0``, SuperGlue's
    ``match_pairs.py``, LoFTR's ``epidist_prec``); NaN errors are incorrect.

    Args:
        errors: the pair's :func:`epipolar_errors`.
        threshold: strict upper bound of a correct match (default 5e-4).

    Returns:
        The precision in [0, 1]; 0 for a pair without matches.

    Raises:
        InvalidInput: errors not 1-D, a threshold <= 0 or not finite.

    >>> epipolar_precision([1e-4, 5e-4, 1e-3, float("nan")])  # 5e-4 itself is not < 5e-4
    0.25
    """
    d, t = _distances(errors), _threshold(threshold)
    correct = d < t
    return float(np.mean(correct)) if len(correct) > 0 else 0.0


def matching_score(
    errors: ArrayLike, n_keypoints0: int, threshold: float = EPIPOLAR_THRESHOLD
) -> float:
    """One pair's matching score: its correct matches (epipolar error < ``threshold``) over
    the keypoints detected in image 0 (``num_correct / len(kpts0) if len(kpts0) > 0 else 0``,
    SuperGlue's ``match_pairs.py``).

    Args:
        errors: the pair's :func:`epipolar_errors`.
        n_keypoints0: the number of keypoints of image 0, matched or not (>= the matches).
        threshold: as in :func:`epipolar_precision`.

    Returns:
        The score in [0, 1]; 0 for an image 0 without keypoints.

    Raises:
        InvalidInput: errors not 1-D, a threshold <= 0, ``n_keypoints0`` < 0 or fewer than
            the matches.

    >>> matching_score([1e-4, 1e-3], 8)
    0.125
    """
    d, t = _distances(errors), _threshold(threshold)
    n = int(n_keypoints0)
    if n != n_keypoints0 or n < len(d):
        raise InvalidInput(
            f"n_keypoints0 is a whole number >= the {len(d)} matches, got {n_keypoints0}"
        )
    num_correct = int(np.sum(d < t))
    return num_correct / n if n > 0 else 0.0
