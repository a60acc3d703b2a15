"""Estimated homographies: reprojection error, corner error and homography accuracy.

A homography is a (3, 3) float64 array; a missing one (failed estimation) is all NaN, or None
(or an absent key) in a mapping; a matrix partly NaN is refused. The other conventions are in
the docstring of :mod:`evalstore.core.matching`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from evalstore.core.geometry import apply_homography, as_1d, as_floats, refuse_infinity
from evalstore.core.matching.pairs import as_ids, as_thresholds, distance, pair_codes
from evalstore.errors import InvalidInput

__all__ = ["corner_error", "homography_accuracy", "reprojection_error"]

ArrayLike = npt.ArrayLike
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]


# ----------------------------------------------------------------------------- validation


def _missing(h: FloatArray) -> BoolArray:
    """All-NaN (3, 3) matrices of a (P, 3, 3) stack: missing (failed estimation)."""
    return np.asarray(np.isnan(h).all(axis=(1, 2)), dtype=np.bool_)


def _as_stack(h: ArrayLike, what: str, n: int | None = None) -> tuple[FloatArray, BoolArray]:
    """A (P, 3, 3) stack where a missing homography is all NaN; returns it and the missing mask."""
    try:
        arr = np.asarray(h, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{what} must be numbers: {exc}") from None
    if arr.ndim != 3 or arr.shape[1:] != (3, 3) or (n is not None and arr.shape[0] != n):
        want = f"({'P' if n is None else n}, 3, 3)"
        raise InvalidInput(f"{what} must have shape {want}, got {arr.shape}")
    missing = _missing(arr)
    bad = ~np.isfinite(arr).all(axis=(1, 2)) & ~missing
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InvalidInput(
            f"{what}[{i}] is partly non-finite: a homography is all finite, or all NaN if missing"
        )
    return arr, missing


def _from_mapping(mapping: Mapping[Any, Any], ids: np.ndarray, what: str) -> FloatArray:
    """Stack ``mapping[id]`` for each pair id; absent keys and None give an all-NaN matrix."""
    out = np.full((ids.size, 3, 3), np.nan)
    for i, key in enumerate(ids.tolist()):
        value = mapping.get(key)
        if value is not None:
            out[i] = as_floats(value, f"{what}[{key!r}]", (3, 3))
    return out


# ----------------------------------------------------------------------------- metrics


def reprojection_error(
    pair: ArrayLike,
    x0: ArrayLike,
    y0: ArrayLike,
    x1: ArrayLike,
    y1: ArrayLike,
    r: ArrayLike | Mapping[Any, Any],
    pairs: ArrayLike | None = None,
) -> tuple[np.ndarray, FloatArray]:
    """Per pair, the mean distance between each match's point of image 0 and its point of
    image 1 mapped into image 0 by the pair's estimated homography R (EventPoint, HVGA ATIS).

    ``(tx, ty) = transfer(R, x1, y1)``, ``d = sqrt((tx - x0)*(tx - x0) + (ty - y0)*(ty - y0))``,
    ``e_i = mean_j d_ij`` (``sum / M_i``; the SQL uses ``avg``). R is typically
    :func:`~evalstore.core.geometry.estimate_homography` of the pair's matches.

    Args:
        pair, x0, y0, x1, y1: one row per match.
        r: the homographies image 1 -> image 0: a (P, 3, 3) array aligned with the returned pair
            ids (then ``pairs``, if given, must be sorted and distinct), all NaN where missing;
            or a mapping pair id -> (3, 3) matrix or None (an absent key is missing).
        pairs: every pair id; default the ids in ``pair``.

    Returns:
        (pair_ids, values): sorted distinct pair ids and (P,) mean errors in pixels; NaN for a
        pair whose R is missing (failed estimation) or that has no match.

    Raises:
        InvalidInput: NaN/infinite coordinates, a partly NaN R, R of the wrong shape, a point
            mapped to infinity, a match whose pair is not in ``pairs``.

    R moves (x1, y1) by (-5, 3): the first match lands on its (0, 0), the second 5 px off:

    >>> r = {"p": np.array([[1.0, 0.0, -5.0], [0.0, 1.0, 3.0], [0.0, 0.0, 1.0]])}
    >>> reprojection_error(["p", "p"], [0.0, 0.0], [0.0, 0.0], [5.0, 8.0], [-3.0, 1.0], r)[1]
    array([2.5])
    """
    a = as_1d(x0, "x0")
    n = a.size
    b, c, e = as_1d(y0, "y0", n), as_1d(x1, "x1", n), as_1d(y1, "y1", n)
    ids, codes = pair_codes(pair, n, pairs)
    if isinstance(r, Mapping):
        stack = _from_mapping(r, ids, "R")
        missing = _missing(stack)
    else:
        if pairs is not None:
            given = as_ids(pairs, "pairs")
            if given.size != ids.size or (given != ids).any():
                raise InvalidInput(
                    "R as an array is aligned with the sorted distinct pair ids, so pairs must "
                    "be sorted and distinct; pass R as a mapping pair id -> matrix otherwise"
                )
        stack, missing = _as_stack(r, "R", ids.size)
    use = np.flatnonzero(~missing[codes])
    tx, ty, w = apply_homography(stack[codes[use]], c[use], e[use])
    refuse_infinity(w, "match {i} (by the R of its pair)", use)
    d = distance(tx, ty, a[use], b[use])
    total = np.bincount(codes[use], weights=d, minlength=ids.size)
    count = np.bincount(codes[use], minlength=ids.size)
    values = np.full(ids.size, np.nan)
    has = count > 0
    values[has] = total[has] / count[has]
    return ids, values


def _corner_error(
    h_true: FloatArray,
    h_est: FloatArray,
    width: FloatArray,
    height: FloatArray,
    use: IntArray,
    corners: str = "image",
) -> FloatArray:
    """``(d1 + d2 + d3 + d4) / 4`` for the pairs ``use`` (all matrices present); ``corners``
    ``image``: (0, 0), (w-1, 0), (0, h-1), (w-1, h-1); ``superpoint``: SuperPoint's (0, 0),
    (0, w-1), (h-1, 0), (h-1, w-1) as (x, y), its code indexing shape = (h, w)."""
    xr, yb = width[use] - 1, height[use] - 1
    zero = np.zeros(use.size)
    total = zero
    order = (
        ((zero, zero), (xr, zero), (zero, yb), (xr, yb))
        if corners == "image"
        else ((zero, zero), (zero, xr), (yb, zero), (yb, xr))
    )
    for cx, cy in order:  # corner order matters
        ex, ey, we = apply_homography(h_est[use], cx, cy)
        gx, gy, wt = apply_homography(h_true[use], cx, cy)
        # a corner mapped to infinity (w = 0): an infinite error, i.e. incorrect, as
        # SuperPoint's division by w gives (and the SQL's NULL distance)
        with np.errstate(divide="ignore", invalid="ignore"):
            d = distance(ex, ey, gx, gy)
        total = total + np.where((we == 0) | (wt == 0), np.inf, d)
    return total / 4


def _corner_inputs(
    h_true: ArrayLike, h_est: ArrayLike, width: ArrayLike, height: ArrayLike
) -> tuple[FloatArray, BoolArray, FloatArray, BoolArray, FloatArray, FloatArray]:
    ht, miss_t = _as_stack(h_true, "H_true")
    he, miss_e = _as_stack(h_est, "H_est", ht.shape[0])
    p = ht.shape[0]
    sizes = []
    for value, what in ((width, "width"), (height, "height")):
        s = as_floats(value, what)
        if s.ndim > 1 or (s.ndim == 1 and s.size != p):
            raise InvalidInput(f"{what} must be a number or one per pair ({p}), got {s.shape}")
        if (s < 1).any() or (s != np.floor(s)).any():
            raise InvalidInput(f"{what} must be whole numbers of pixels >= 1, got {s}")
        sizes.append(np.broadcast_to(s, (p,)))
    return ht, miss_t, he, miss_e, sizes[0], sizes[1]


def corner_error(
    h_true: ArrayLike, h_est: ArrayLike, width: ArrayLike, height: ArrayLike
) -> FloatArray:
    """Per pair, the mean distance of the 4 image corners warped by the estimated and the true
    homography (SuperPoint, DeTone et al. 2018, HPatches homography estimation).

    Corners ``(0, 0), (w-1, 0), (0, h-1), (w-1, h-1)`` in that order; per corner ``d_k`` is the
    match distance with ``(x1, y1) = transfer(H_est, c_k)`` and ``(gx, gy) = transfer(H_true,
    c_k)``; the error is ``(d1 + d2 + d3 + d4) / 4``, summed left to right. Example:
    H_est = diag(1.01, 1.01, 1), H_true = I, 640 x 480: (0 + 6.39 + 4.79 + 7.986...) / 4 =
    4.7915... (the (w, h) corners would give 4.8):

    >>> corner_error(np.eye(3)[None], np.diag([1.01, 1.01, 1.0])[None], 640, 480).round(4)
    array([4.7915])

    Args:
        h_true, h_est: (P, 3, 3), all NaN where missing.
        width, height: image size in pixels, one number or one per pair.

    Returns:
        (P,) errors in pixels; NaN where either homography is missing; inf where one maps a
        corner to infinity (``w = 0``).

    Raises:
        InvalidInput: wrong shapes, a partly NaN matrix, a size that is not a whole number >= 1.
    """
    ht, miss_t, he, miss_e, w, h = _corner_inputs(h_true, h_est, width, height)
    out = np.full(ht.shape[0], np.nan)
    use = np.flatnonzero(~miss_t & ~miss_e)
    out[use] = _corner_error(ht, he, w, h, use)
    return out


def homography_accuracy(
    h_true: ArrayLike,
    h_est: ArrayLike,
    width: ArrayLike,
    height: ArrayLike,
    eps: ArrayLike = (1.0, 3.0, 5.0),
    *,
    corners: str = "image",
) -> FloatArray:
    """Per pair and threshold, 1.0 if the homography is correct (``corner_error <= eps``), else 0.

    SuperPoint's homography estimation accuracy; the mean over pairs is the fraction of correct
    pairs. Edge cases: a missing H_est (failed estimation) counts as incorrect (0.0); a missing
    H_true gives NaN (the pair has no ground truth); an error equal to eps is correct.

    Args:
        h_true, h_est, width, height: as in :func:`corner_error`.
        eps: a threshold or a 1-D array of thresholds in pixels (finite, >= 0).
        corners: ``image`` (the image's four corners) or ``superpoint`` (the corners of
            SuperPoint's compute_homography, x over 0..h-1 and y over 0..w-1).

    Returns:
        (P, E) array of 0.0 / 1.0 / NaN.

    The 1% scale of :func:`corner_error` (4.79 px) is correct at eps 5, not at 1 or 3:

    >>> homography_accuracy(np.eye(3)[None], np.diag([1.01, 1.01, 1.0])[None], 640, 480)
    array([[0., 0., 1.]])
    """
    ht, miss_t, he, miss_e, w, h = _corner_inputs(h_true, h_est, width, height)
    t = as_thresholds(eps, "eps")
    out = np.zeros((ht.shape[0], t.size))
    use = np.flatnonzero(~miss_t & ~miss_e)
    err = _corner_error(ht, he, w, h, use, corners)
    out[use] = (err[:, None] <= t[None, :]).astype(np.float64)
    out[miss_t] = np.nan
    return out
