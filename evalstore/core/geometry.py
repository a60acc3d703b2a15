"""Geometry of the matching metrics: the NumPy reference (``docs/metrics.md``, "Geometric
matching metrics").

Point transfer by homographies, ground truth from a homography or a disparity, checking,
inverting and estimating homographies. The matching metrics built on them (precision@sigma,
MMA, IoU, reprojection and corner errors, homography accuracy) are in
:mod:`evalstore.core.matching`.

The SQL metrics transfer points with the same float formula, in the same operation order
(float64, left to right), so that they agree with these functions to 1e-12 relative:

- point transfer by a homography ``H`` (row-major ``h11..h33``), ``x' ~ H x``::

      w  = h31*x + h32*y + h33
      x' = (h11*x + h12*y + h13) / w
      y' = (h21*x + h22*y + h23) / w

Conventions:

- Non-finite coordinates are refused (:class:`~evalstore.errors.InvalidInput` naming the
  index): filter invalid ground truth (e.g. a zero disparity) out before, as
  ``docs/metrics.md`` says.
- A homography is a (3, 3) float64 array; a missing one (failed estimation) is all NaN (or None
  in a mapping). A matrix partly NaN is refused.
- Pixel coordinates: (0, 0) is the centre of the top-left pixel, so an image of width ``w`` spans
  columns 0 .. w-1 (the rounding of :func:`sample_disparity`, the corners of
  :func:`evalstore.core.matching.corner_error`).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from evalstore.errors import InvalidInput

__all__ = [
    "DET_EPS",
    "apply_homography",
    "as_1d",
    "as_floats",
    "check_homography",
    "estimate_homography",
    "estimate_pairs",
    "ground_truth_from_disparity",
    "ground_truth_from_homography",
    "invert_homography",
    "refuse_infinity",
    "sample_disparity",
    "transfer",
]

#: A homography with ``|det| <`` this is singular (refused, or a failed estimate).
DET_EPS = 1e-12

ArrayLike = npt.ArrayLike
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


# ----------------------------------------------------------------------------- validation


def as_floats(values: ArrayLike, what: str, shape: tuple[int, ...] | None = None) -> FloatArray:
    """``values`` as a float64 array, every entry finite (and of ``shape`` if given).

    Raises:
        InvalidInput: not numbers, the wrong shape, or a NaN/infinite entry (naming ``what``
            and the index).
    """
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{what} must be numbers: {exc}") from None
    if shape is not None and arr.shape != shape:
        raise InvalidInput(f"{what} must have shape {shape}, got {arr.shape}")
    bad = ~np.isfinite(arr)
    if bad.any():
        i = np.unravel_index(int(np.flatnonzero(bad)[0]), arr.shape)
        where = f" at index {i[0] if len(i) == 1 else i}" if arr.ndim else ""
        raise InvalidInput(f"{what}{where} is {arr[i]}: NaN and infinity are not allowed")
    return arr


def as_1d(values: ArrayLike, what: str, n: int | None = None) -> FloatArray:
    """:func:`as_floats`, one-dimensional (of length ``n`` if given).

    Raises:
        InvalidInput: as :func:`as_floats`, or not 1-D of length ``n``.
    """
    arr = as_floats(values, what)
    if arr.ndim != 1 or (n is not None and arr.size != n):
        want = "a 1-D array" + ("" if n is None else f" of length {n}")
        raise InvalidInput(f"{what} must be {want}, got shape {arr.shape}")
    return arr


def check_homography(h: ArrayLike, what: str) -> FloatArray:
    """Refuse a homography that is not a finite, non-singular (3, 3) matrix.

    Args:
        h: the matrix.
        what: its name in the error message (e.g. ``"H of pair 12"``).

    Returns:
        The matrix as a float64 array.

    Raises:
        InvalidInput: wrong shape, a NaN/infinite entry, or ``|det(h)| < 1e-12`` (singular).
    """
    arr = as_floats(h, what, (3, 3))
    det = float(np.linalg.det(arr))
    if not abs(det) >= DET_EPS:
        raise InvalidInput(f"{what} is singular: |det| = {abs(det):.3g} < {DET_EPS:g}")
    return arr


def invert_homography(h: ArrayLike) -> FloatArray | None:
    """``H^-1`` (``np.linalg.inv``) scaled so that its ``[2, 2]`` entry is 1.

    Returns:
        The inverse, or None when ``h`` is non-finite, singular (``|det| < 1e-12``), or its
        inverse is non-finite or has ``[2, 2] == 0`` (cannot be normalised).

    Raises:
        InvalidInput: ``h`` is not a (3, 3) array of numbers.
    """
    try:
        arr = np.asarray(h, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"homography must be numbers: {exc}") from None
    if arr.shape != (3, 3):
        raise InvalidInput(f"homography must have shape (3, 3), got {arr.shape}")
    if not np.isfinite(arr).all() or not abs(float(np.linalg.det(arr))) >= DET_EPS:
        return None
    try:
        inv = np.linalg.inv(arr)
    except np.linalg.LinAlgError:
        return None
    if not np.isfinite(inv).all() or inv[2, 2] == 0:
        return None
    return inv / inv[2, 2]


# ----------------------------------------------------------------------------- transfer


def apply_homography(
    h: FloatArray, x: FloatArray, y: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The formula of :func:`transfer`, unchecked: ``(x', y', w)``, infinite or NaN where
    ``w == 0`` (see :func:`refuse_infinity`); ``h`` is (3, 3) or (..., 3, 3) broadcast with x, y."""
    w = h[..., 2, 0] * x + h[..., 2, 1] * y + h[..., 2, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        tx = (h[..., 0, 0] * x + h[..., 0, 1] * y + h[..., 0, 2]) / w
        ty = (h[..., 1, 0] * x + h[..., 1, 1] * y + h[..., 1, 2]) / w
    return tx, ty, w


def refuse_infinity(w: FloatArray, what: str, index: np.ndarray | None = None) -> None:
    """Refuse points with ``w == 0``; ``what`` names the first one through ``{i}``."""
    bad = w == 0
    if bad.any():
        i = int(np.flatnonzero(bad.reshape(-1))[0])
        j = i if index is None else int(index[i])
        raise InvalidInput(f"{what.format(i=j)} maps to infinity (w = h31*x + h32*y + h33 = 0)")


def transfer(h: ArrayLike, x: ArrayLike, y: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Map points by a homography: ``x' ~ H x`` in homogeneous coordinates.

    ``w = h31*x + h32*y + h33``, ``x' = (h11*x + h12*y + h13) / w``,
    ``y' = (h21*x + h22*y + h23) / w``, each sum evaluated left to right (Hartley & Zisserman,
    *Multiple View Geometry*, 2.3). H = translation by (5, -3) maps (1, 1) to (6, -2):

    >>> transfer([[1, 0, 5], [0, 1, -3], [0, 0, 1]], [1.0], [1.0])
    (array([6.]), array([-2.]))

    Args:
        h: (3, 3) for every point, or (n, 3, 3), one matrix per point of 1-D ``x``/``y``.
        x, y: coordinates, same shape.

    Returns:
        (x', y') with the shape of ``x``.

    Raises:
        InvalidInput: NaN/infinite matrix or point, shapes that do not fit, a point with w == 0
            (mapped to infinity).
    """
    xs, ys = as_floats(x, "x"), as_floats(y, "y")
    if xs.shape != ys.shape:
        raise InvalidInput(f"x and y must have the same shape, got {xs.shape} and {ys.shape}")
    hs = as_floats(h, "homography")
    if hs.shape != (3, 3) and not (xs.ndim == 1 and hs.shape == (xs.size, 3, 3)):
        raise InvalidInput(
            f"homography must have shape (3, 3) or (n, 3, 3) with n = {xs.size} points "
            f"(1-D x, y), got {hs.shape}"
        )
    tx, ty, w = apply_homography(hs, xs, ys)
    refuse_infinity(w, "point {i}")
    return tx, ty


def ground_truth_from_homography(
    h: ArrayLike, x0: ArrayLike, y0: ArrayLike
) -> tuple[FloatArray, FloatArray]:
    """Ground truth in image 1 of points of image 0 by ``H`` (``x1 ~ H x0``): :func:`transfer`."""
    return transfer(h, x0, y0)


def ground_truth_from_disparity(
    x0: ArrayLike, y0: ArrayLike, d: ArrayLike
) -> tuple[FloatArray, FloatArray, BoolArray]:
    """Ground truth from a disparity at each point of the left image (DSEC convention).

    ``x1 = x0 - d``, ``y1 = y0`` (rectified stereo, left camera; DSEC, Gehrig et al. 2021). A
    disparity of exactly 0 means *no ground truth*: ``valid`` is False there and the match is to
    be left out (its ``x1`` is just ``x0``).

    Returns:
        (x1, y1, valid).

    Raises:
        InvalidInput: shapes that differ or a NaN/infinite value.
    """
    xs, ys, ds = as_floats(x0, "x0"), as_floats(y0, "y0"), as_floats(d, "disparity")
    if not xs.shape == ys.shape == ds.shape:
        raise InvalidInput(
            f"x0, y0 and disparity must have the same shape, got {xs.shape}, {ys.shape}, {ds.shape}"
        )
    return xs - ds, ys.copy(), ds != 0


def sample_disparity(
    disparity: ArrayLike, x0: ArrayLike, y0: ArrayLike, scale: float = 1.0
) -> FloatArray:
    """The disparity at the nearest pixel of each point: ``map[row, col] * scale``.

    ``col = floor(x0 + 0.5)``, ``row = floor(y0 + 0.5)`` (pixel centres at integers, halves round
    up: 2.5 -> 3, -0.5 -> 0). A 16-bit DSEC disparity PNG stores ``disparity * 256``, so pass
    ``scale=1/256``; zeros stay 0 (invalid, see :func:`ground_truth_from_disparity`).

    Args:
        disparity: the (H, W) map, any numeric dtype (e.g. uint16).
        x0, y0: 1-D point coordinates in the left image.
        scale: factor applied to the raw values.

    Returns:
        (n,) float64 disparities.

    Raises:
        InvalidInput: a map that is not 2-D, NaN/infinite points or scale, or a point whose pixel
            falls outside the map (negative, or beyond its rows/columns), naming the first one.
    """
    m = np.asarray(disparity)
    if m.ndim != 2 or m.dtype.kind not in "iuf":
        raise InvalidInput(
            f"disparity map must be a 2-D numeric array, got dtype {m.dtype} shape {m.shape}"
        )
    xs = as_1d(x0, "x0")
    ys = as_1d(y0, "y0", xs.size)
    s_arr = as_floats(scale, "scale")
    if s_arr.ndim != 0:
        raise InvalidInput(f"scale must be one number, got shape {s_arr.shape}")
    s = float(s_arr)
    col = np.floor(xs + 0.5)
    row = np.floor(ys + 0.5)
    out = (col < 0) | (col >= m.shape[1]) | (row < 0) | (row >= m.shape[0])
    if out.any():
        i = int(np.flatnonzero(out)[0])
        raise InvalidInput(
            f"point {i} ({xs[i]}, {ys[i]}) falls on pixel row {int(row[i])}, column "
            f"{int(col[i])}, outside the disparity map of shape {m.shape} (rows, columns)"
        )
    return m[row.astype(np.intp), col.astype(np.intp)].astype(np.float64) * s


# ----------------------------------------------------------------------------- estimation


def estimate_homography(
    x0: ArrayLike,
    y0: ArrayLike,
    x1: ArrayLike,
    y1: ArrayLike,
    *,
    threshold: float = 3.0,
    seed: int = 0,
) -> tuple[FloatArray | None, int]:
    """Estimate the homography R mapping image 1 -> image 0 from one pair's matches (RANSAC).

    ``cv2.setRNGSeed(seed)`` then ``cv2.findHomography(pts1, pts0, cv2.RANSAC, threshold,
    maxIters=2000, confidence=0.995)`` (OpenCV; deterministic for a given seed), normalised so
    that ``R[2, 2] == 1``. OpenCV works in float32 internally, so R agrees with an exact
    homography to ~1e-7 relative.

    Edge cases: fewer than 4 matches, or a failed or degenerate estimate (empty, non-finite,
    ``R[2, 2] == 0``, ``|det R| < 1e-12``) -> ``(None, 0)``.

    Returns:
        (R, n_inliers): R a (3, 3) float64 array, n_inliers the size of the RANSAC inlier set.

    Raises:
        InvalidInput: NaN/infinite coordinates or lengths that differ.
        ImportError: OpenCV (``opencv-python-headless``) is not installed.
    """
    a = as_1d(x0, "x0")
    n = a.size
    b, c, e = as_1d(y0, "y0", n), as_1d(x1, "x1", n), as_1d(y1, "y1", n)
    if n < 4:
        return None, 0
    try:
        import cv2
    except ImportError as exc:
        raise ImportError(
            "estimate_homography needs OpenCV: pip install 'opencv-python-headless>=4.9'"
        ) from exc
    pts0 = np.ascontiguousarray(np.stack([a, b], axis=1))
    pts1 = np.ascontiguousarray(np.stack([c, e], axis=1))
    cv2.setRNGSeed(int(seed))
    try:
        r, mask = cv2.findHomography(
            pts1, pts0, cv2.RANSAC, float(threshold), maxIters=2000, confidence=0.995
        )
    except cv2.error:  # degenerate input (e.g. all points equal) makes OpenCV throw
        return None, 0
    if r is None or r.shape != (3, 3) or not np.isfinite(r).all() or r[2, 2] == 0:
        return None, 0
    r = np.asarray(r, dtype=np.float64) / r[2, 2]
    if not np.isfinite(r).all() or not abs(float(np.linalg.det(r))) >= DET_EPS:
        return None, 0
    return r, int(np.count_nonzero(mask)) if mask is not None else 0


def estimate_pairs(
    x0: FloatArray,
    y0: FloatArray,
    x1: FloatArray,
    y1: FloatArray,
    bounds: np.ndarray,
    threshold: float | FloatArray = 3.0,
) -> tuple[FloatArray, FloatArray, np.ndarray]:
    """Both estimates of every pair, :func:`estimate_homography` twice per pair: r (image
    1 -> 0, EventPoint's reprojection) and e (image 0 -> 1, estimated as such, as SuperPoint's
    ``compute_homography``; RANSAC is not symmetric, so e is not ``inv(r)``).

    Args:
        x0, y0, x1, y1: the matches of all pairs, pair k's at ``bounds[k]:bounds[k + 1]``.
        bounds: (P + 1,) row offsets.
        threshold: the RANSAC inlier threshold (px), one for all or one per pair.

    Returns:
        (r, e, n_inliers): r and e (P, 9) row-major, NaN where the estimate failed;
        n_inliers (P,) int64, the inliers of r (-1 where r failed).
    """
    n_pairs = len(bounds) - 1
    limits = np.broadcast_to(np.asarray(threshold, dtype=np.float64), (n_pairs,))
    r_all, e_all = np.full((n_pairs, 9), np.nan), np.full((n_pairs, 9), np.nan)
    inliers = np.full(n_pairs, -1, dtype=np.int64)
    for k in range(n_pairs):
        s = slice(int(bounds[k]), int(bounds[k + 1]))
        t = float(limits[k])
        r, n = estimate_homography(x0[s], y0[s], x1[s], y1[s], threshold=t)
        e, _ = estimate_homography(x1[s], y1[s], x0[s], y0[s], threshold=t)
        if r is not None:
            r_all[k], inliers[k] = r.reshape(9), n
        if e is not None:
            e_all[k] = e.reshape(9)
    return r_all, e_all, inliers
