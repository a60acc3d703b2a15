"""The corner error of an estimated homography as glue-factory's HPatches benchmark computes
it, and its AUC at 1 / 3 / 5 pixels (the number LightGlue and glue-factory report).

glue-factory's ``homography_corner_error`` (cvg/glue-factory ``gluefactory/geometry/
homography.py`` @ 2d17e3b3bd7d30f0c828d4c4d3eac4ecefbf283d), called by ``eval_homography_robust``
in ``gluefactory/eval/utils.py`` with the estimate ``M_0to1`` (image 0 -> image 1), the true
``H_0to1`` and ``view0.image_size`` (W, H of the resized image 0)::

    corners0 = [[0, 0], [W, 0], [W, H], [0, H]]
    corners1_gt = from_homogeneous(to_homogeneous(corners0) @ T_gt.T)
    corners1 = from_homogeneous(to_homogeneous(corners0) @ T.T)
    d = sqrt(((corners1 - corners1_gt) ** 2).sum(-1));  error = d.mean()

A failed estimate has error +inf (``error_r = float("inf")``); the AUC over pairs is then
``AUCMetric([1, 3, 5], errors)`` (``gluefactory/eval/hpatches.py``), i.e.
:func:`~evalstore.core.pose.auc_gluefactory`, rounded to 4 decimals.

How it differs from evalstore's corner error (:func:`evalstore.core.matching.corner_error`,
``sql/lib/corner_accuracy.sql``, SuperPoint's): the corners there are the centres of the
corner pixels, ``(0, 0), (w-1, 0), (0, h-1), (w-1, h-1)``, here the image's outer corners
``(0, 0), (W, 0), (W, H), (0, H)`` (so a scale error weighs one pixel more per side); both warp
image 0 -> image 1 by the estimate and the truth and take the mean of the four distances (the
order of the four corners does not change the mean beyond the last bit). That metric gives a
pass/fail accuracy per threshold (``<= eps``), this one feeds an AUC; a missing estimate is
NaN there and +inf here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from evalstore.core.geometry import apply_homography
from evalstore.core.pose.auc import HOMOGRAPHY_AUC_THRESHOLDS, pose_auc
from evalstore.errors import InvalidInput

__all__ = ["homography_auc", "homography_corner_errors"]

ArrayLike = npt.ArrayLike
FloatArray = npt.NDArray[np.float64]


def _stack(h: ArrayLike, what: str) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
    """A (P, 3, 3) stack (a single (3, 3) is one pair) and its missing (all-NaN) mask."""
    try:
        arr = np.asarray(h, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{what} must be numbers: {exc}") from None
    if arr.shape == (3, 3):
        arr = arr[None]
    if arr.ndim != 3 or arr.shape[1:] != (3, 3):
        raise InvalidInput(f"{what} must have shape (P, 3, 3) or (3, 3), got {arr.shape}")
    missing = np.asarray(np.isnan(arr).all(axis=(1, 2)), dtype=np.bool_)
    bad = ~np.isfinite(arr).all(axis=(1, 2)) & ~missing
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InvalidInput(f"{what}[{i}] is partly non-finite: all finite, or all NaN if missing")
    return arr, missing


def _size(value: ArrayLike, what: str, p: int) -> FloatArray:
    s = np.asarray(value, dtype=np.float64)
    if s.ndim > 1 or (s.ndim == 1 and s.size != p):
        raise InvalidInput(f"{what} must be a number or one per pair ({p}), got {s.shape}")
    if not np.isfinite(s).all() or (s <= 0).any():
        raise InvalidInput(f"{what} must be finite and > 0 pixels, got {s}")
    return np.broadcast_to(s, (p,)).astype(np.float64)


def homography_corner_errors(
    H_est: ArrayLike, H_true: ArrayLike, width: ArrayLike, height: ArrayLike
) -> FloatArray:
    """Per pair, glue-factory's corner error: the mean distance between the image's four
    outer corners warped by the estimated and by the true homography (module docstring).

    Each corner ``c_k`` in ``(0, 0), (W, 0), (W, H), (0, H)`` is mapped by
    ``x' = (h11*x + h12*y + h13) / w`` (as :func:`~evalstore.core.geometry.transfer`, sums left
    to right), ``d_k = sqrt(dx**2 + dy**2)``, error ``(d1 + d2 + d3 + d4) / 4``.

    Args:
        H_est: the estimates image 0 -> image 1, (P, 3, 3) or one (3, 3); all NaN where the
            estimation failed.
        H_true: the true homographies image 0 -> image 1, the same shape; all NaN if unknown.
        width, height: the size of image 0 in pixels (W, H), one number or one per pair.

    Returns:
        (P,) errors in pixels: +inf for a failed estimate or a corner mapped to infinity
        (``w = 0``), NaN without a true homography.

    Raises:
        InvalidInput: wrong shapes, a partly NaN matrix, a size <= 0 or not finite.

    A 1% scale of a 640 x 480 image: the corners move by 0, 6.4, 8 and 4.8 px, mean 4.8 (4.7915
    with evalstore's pixel-centre corners):

    >>> homography_corner_errors(np.diag([1.01, 1.01, 1.0]), np.eye(3), 640, 480).round(6)
    array([4.8])
    """
    he, miss_e = _stack(H_est, "H_est")
    ht, miss_t = _stack(H_true, "H_true")
    if he.shape != ht.shape:
        raise InvalidInput(f"H_est and H_true must be one per pair: {he.shape} != {ht.shape}")
    p = he.shape[0]
    w, h = _size(width, "width", p), _size(height, "height", p)
    zero = np.zeros(p)
    total = zero
    for cx, cy in ((zero, zero), (w, zero), (w, h), (zero, h)):  # glue-factory's order
        ex, ey, we = apply_homography(he, cx, cy)
        gx, gy, wt = apply_homography(ht, cx, cy)
        with np.errstate(invalid="ignore", over="ignore"):
            d = np.sqrt((ex - gx) ** 2 + (ey - gy) ** 2)
        total = total + np.where((we == 0) | (wt == 0), np.inf, d)
    out: FloatArray = total / 4
    out[miss_e] = np.inf
    out[miss_t] = np.nan
    return out


def homography_auc(
    errors: ArrayLike, thresholds: Sequence[float] = HOMOGRAPHY_AUC_THRESHOLDS
) -> list[float]:
    """The AUC of corner errors at each threshold (pixels): :func:`~evalstore.core.pose.pose_auc`'s
    arithmetic, not rounded (glue-factory's reported number is
    :func:`~evalstore.core.pose.auc_gluefactory` of the same errors, rounded to 4 decimals).

    Args:
        errors: :func:`homography_corner_errors` of the pairs (NaN refused: drop the pairs
            without a true homography first).
        thresholds: pixels, default 1, 3, 5.

    Returns:
        One AUC per threshold.

    Raises:
        InvalidInput: as :func:`~evalstore.core.pose.pose_auc`.

    >>> homography_auc([0.5, 2.0, float("inf")])
    [0.25, 0.5, 0.5666666666666667]
    """
    return pose_auc(errors, thresholds)
