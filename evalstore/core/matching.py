"""Geometric matching metrics: the NumPy reference definitions (DESIGN.md, "Geometric matching
metrics").

Every per-pair metric here is also written in SQL (``sql/metrics/<name>.sql``) and checked against
these functions to 1e-12 relative, so each value is computed with the float formula its docstring
gives, in that operation order (float64, left to right):

- point transfer by a homography: :func:`evalstore.core.geometry.transfer` (its module gives the
  formula);
- match distance (a square root of products, not ``hypot`` nor ``**2``)::

      d = sqrt((x1 - gx)*(x1 - gx) + (y1 - gy)*(y1 - gy))

Conventions shared by every function:

- One row per match: ``pair`` is the pair id of each match (integer codes or any sortable array),
  ``x1, y1`` the matched point in image 1, ``gx, gy`` its ground truth in image 1. Non-finite
  coordinates are refused (:class:`~evalstore.errors.InvalidInput` naming the index): filter
  invalid ground truth (e.g. a zero disparity) out before, as DESIGN.md says.
- ``pairs``: optionally every pair id of the evaluation, including pairs without any (valid)
  match. Results are ``(pair_ids, values)`` like :func:`evalstore.core.ranking.per_list`, with
  ``pair_ids`` the sorted distinct ids (of ``pairs`` if given, else of ``pair``); every match's
  pair must then be one of ``pairs``.
- A homography is a (3, 3) float64 array; a missing one (failed estimation) is all NaN (or None
  in a mapping). A matrix partly NaN is refused.
- Pixel coordinates: (0, 0) is the centre of the top-left pixel, so an image of width ``w`` spans
  columns 0 .. w-1 (the corners of :func:`corner_error`).

All per-pair functions are vectorised over pairs; the only Python loops run over thresholds or
over the entries of a mapping the caller passes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from evalstore.core.geometry import _apply, _as_1d, _as_floats, _refuse_infinity
from evalstore.errors import InvalidInput

__all__ = [
    "corner_error",
    "homography_accuracy",
    "iou",
    "iou_macro",
    "iou_micro",
    "match_distance",
    "mma",
    "precision_at_sigma",
    "reprojection_error",
]

ArrayLike = npt.ArrayLike
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]


# ----------------------------------------------------------------------------- validation


def _as_thresholds(values: ArrayLike, what: str) -> FloatArray:
    t = np.atleast_1d(_as_floats(values, what))
    if t.ndim != 1:
        raise InvalidInput(f"{what} must be a number or a 1-D array, got shape {t.shape}")
    if (t < 0).any():
        i = int(np.flatnonzero(t < 0)[0])
        raise InvalidInput(f"{what} at index {i} is {t[i]}: thresholds must be >= 0")
    return t


def _as_ids(values: ArrayLike, what: str) -> np.ndarray:
    ids = np.asarray(values)
    if ids.ndim != 1:
        raise InvalidInput(f"{what} must be a 1-D array of pair ids, got shape {ids.shape}")
    if ids.dtype.kind == "f" and np.isnan(ids).any():
        raise InvalidInput(f"{what} at index {int(np.flatnonzero(np.isnan(ids))[0])} is NaN")
    return ids


def _pair_codes(pair: ArrayLike, n: int, pairs: ArrayLike | None) -> tuple[np.ndarray, IntArray]:
    """The sorted distinct pair ids and, per match, the index of its pair among them."""
    p = _as_ids(pair, "pair")
    if p.size != n:
        raise InvalidInput(f"pair must have one id per match ({n}), got {p.size}")
    try:
        if pairs is None:
            ids, codes = np.unique(p, return_inverse=True)
            return ids, codes.astype(np.int64).reshape(-1)
        ids = np.unique(_as_ids(pairs, "pairs"))
        codes = np.searchsorted(ids, p).astype(np.int64)
    except TypeError as exc:
        raise InvalidInput(f"pair ids must be sortable values of one kind: {exc}") from None
    if ids.size == 0 and n:
        raise InvalidInput(f"match 0 has pair id {p[:1].tolist()[0]!r}, not in pairs (empty)")
    found = np.zeros(n, dtype=bool) if ids.size == 0 else ids[np.minimum(codes, ids.size - 1)] == p
    if not found.all():
        i = int(np.flatnonzero(~found)[0])
        raise InvalidInput(f"match {i} has pair id {p[i : i + 1].tolist()[0]!r}, not in pairs")
    return ids, codes


def _missing(h: FloatArray) -> BoolArray:
    """All-NaN (3, 3) matrices of a (P, 3, 3) stack: missing (failed estimation)."""
    return np.isnan(h).all(axis=(1, 2))


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
            out[i] = _as_floats(value, f"{what}[{key!r}]", (3, 3))
    return out


# ----------------------------------------------------------------------------- matching


def match_distance(x1: ArrayLike, y1: ArrayLike, gx: ArrayLike, gy: ArrayLike) -> FloatArray:
    """``d = sqrt((x1 - gx)*(x1 - gx) + (y1 - gy)*(y1 - gy))`` per match (the house formula).

    Raises:
        InvalidInput: shapes that differ or a NaN/infinite coordinate.
    """
    a = _as_floats(x1, "x1")
    b, c, e = _as_floats(y1, "y1"), _as_floats(gx, "gx"), _as_floats(gy, "gy")
    if not a.shape == b.shape == c.shape == e.shape:
        raise InvalidInput(
            f"x1, y1, gx, gy must have the same shape, got {a.shape}, {b.shape}, {c.shape}, "
            f"{e.shape}"
        )
    return _distance(a, b, c, e)


def _distance(x1: FloatArray, y1: FloatArray, gx: FloatArray, gy: FloatArray) -> FloatArray:
    dx = x1 - gx
    dy = y1 - gy
    return np.sqrt(dx * dx + dy * dy)


def _fraction_within(
    pair: ArrayLike,
    x1: ArrayLike,
    y1: ArrayLike,
    gx: ArrayLike,
    gy: ArrayLike,
    thresholds: ArrayLike,
    pairs: ArrayLike | None,
    inclusive: bool,
    what: str,
) -> tuple[np.ndarray, FloatArray]:
    a = _as_1d(x1, "x1")
    n = a.size
    d = _distance(a, _as_1d(y1, "y1", n), _as_1d(gx, "gx", n), _as_1d(gy, "gy", n))
    t = _as_thresholds(thresholds, what)
    ids, codes = _pair_codes(pair, n, pairs)
    n_matches = np.bincount(codes, minlength=ids.size)
    values = np.zeros((ids.size, t.size))
    has = n_matches > 0
    for j, tj in enumerate(t):  # a loop over thresholds, not pairs
        hit = d <= tj if inclusive else d < tj
        correct = np.bincount(codes[hit], minlength=ids.size)
        values[has, j] = correct[has] / n_matches[has]
    return ids, values


def precision_at_sigma(
    pair: ArrayLike,
    x1: ArrayLike,
    y1: ArrayLike,
    gx: ArrayLike,
    gy: ArrayLike,
    sigmas: ArrayLike = (3.0, 6.0, 9.0),
    pairs: ArrayLike | None = None,
) -> tuple[np.ndarray, FloatArray]:
    """Per pair, the fraction of its matches closer than sigma to their ground truth (strict).

    ``p_i(sigma) = (1/M_i) sum_j [d_ij < sigma]`` with ``d`` the match distance (module
    docstring) and ``M_i`` the number of (valid) matches of pair i; the mean over pairs,
    ``(1/N) sum_i p_i``, is EventPoint's precision (Huang et al. 2023, eq. "Precision"),
    sigma = 3, 6, 9 px. The division is ``count / M_i`` of two integers in float64.

    Edge cases: a pair without any match (listed in ``pairs`` only) scores 0, as in DESIGN.md; a
    distance exactly equal to sigma does not count (strict ``<``; compare :func:`mma`).

    Args:
        pair, x1, y1, gx, gy: one row per match (module conventions).
        sigmas: a threshold or a 1-D array of thresholds (finite, >= 0), in pixels.
        pairs: every pair id, including pairs without matches; default the ids in ``pair``.

    Returns:
        (pair_ids, values): sorted distinct pair ids, and (P, S) fractions in [0, 1].

    Raises:
        InvalidInput: NaN/infinite coordinate, lengths that differ, bad sigma, a match whose pair
            is not in ``pairs``.
    """
    return _fraction_within(pair, x1, y1, gx, gy, sigmas, pairs, False, "sigmas")


def mma(
    pair: ArrayLike,
    x1: ArrayLike,
    y1: ArrayLike,
    gx: ArrayLike,
    gy: ArrayLike,
    thresholds: ArrayLike = tuple(range(1, 11)),
    pairs: ArrayLike | None = None,
) -> tuple[np.ndarray, FloatArray]:
    """Mean matching accuracy per pair: the fraction of its matches within t px (inclusive).

    ``a_i(t) = (1/M_i) sum_j [d_ij <= t]``, t = 1..10 px; the mean over pairs is the MMA curve of
    D2-Net (Dusmanu et al. 2019; its HPatches evaluation code compares ``dist <= thr``). Same
    arguments, returns and edge cases as :func:`precision_at_sigma`, except that a distance
    equal to t counts.
    """
    return _fraction_within(pair, x1, y1, gx, gy, thresholds, pairs, True, "thresholds")


# ----------------------------------------------------------------------------- iou


def _as_counts(values: ArrayLike, what: str) -> IntArray:
    arr = np.asarray(values)
    if arr.dtype.kind not in "iuf" or arr.ndim != 1:
        raise InvalidInput(
            f"{what} must be a 1-D array of counts, got dtype {arr.dtype} shape {arr.shape}"
        )
    bad = (
        ~np.isfinite(arr) | (arr < 0) | (arr != np.floor(arr)) if arr.dtype.kind == "f" else arr < 0
    )
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InvalidInput(f"{what} at index {i} is {arr[i]}: counts must be integers >= 0")
    return arr.astype(np.int64)


def _iou_counts(tp: ArrayLike, fp: ArrayLike, fn: ArrayLike) -> tuple[IntArray, IntArray]:
    t, f, n = _as_counts(tp, "tp"), _as_counts(fp, "fp"), _as_counts(fn, "fn")
    if not t.shape == f.shape == n.shape:
        raise InvalidInput(
            f"tp, fp, fn must have one count per group, got lengths {t.size}, {f.size}, {n.size}"
        )
    return t, t + f + n


def iou(tp: ArrayLike, fp: ArrayLike, fn: ArrayLike) -> FloatArray:
    """Intersection over union per group: ``TP / (TP + FP + FN)`` (EventPoint, N-Caltech101).

    Counts are summed exactly as integers, then divided in float64. Example: TP 3, FP 1, FN 2
    -> 3 / 6 = 0.5. Edge case: ``TP + FP + FN == 0`` -> NaN.

    Raises:
        InvalidInput: counts that are negative, not whole numbers, or of different lengths.
    """
    t, total = _iou_counts(tp, fp, fn)
    out = np.full(t.size, np.nan)
    ok = total > 0
    out[ok] = t[ok] / total[ok]
    return out


def iou_micro(tp: ArrayLike, fp: ArrayLike, fn: ArrayLike) -> float:
    """Pooled IoU: ``sum TP / sum (TP + FP + FN)`` over the groups; NaN when the sum is 0."""
    t, total = _iou_counts(tp, fp, fn)
    denominator = int(total.sum())
    return int(t.sum()) / denominator if denominator else float("nan")


def iou_macro(tp: ArrayLike, fp: ArrayLike, fn: ArrayLike) -> float:
    """Mean of the per-group :func:`iou`, leaving NaN groups out; NaN if every group is NaN."""
    values = iou(tp, fp, fn)
    ok = ~np.isnan(values)
    return float(np.mean(values[ok])) if ok.any() else float("nan")


# ----------------------------------------------------------------------------- homographies


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
    """
    a = _as_1d(x0, "x0")
    n = a.size
    b, c, e = _as_1d(y0, "y0", n), _as_1d(x1, "x1", n), _as_1d(y1, "y1", n)
    ids, codes = _pair_codes(pair, n, pairs)
    if isinstance(r, Mapping):
        stack = _from_mapping(r, ids, "R")
        missing = _missing(stack)
    else:
        if pairs is not None:
            given = _as_ids(pairs, "pairs")
            if given.size != ids.size or (given != ids).any():
                raise InvalidInput(
                    "R as an array is aligned with the sorted distinct pair ids, so pairs must "
                    "be sorted and distinct; pass R as a mapping pair id -> matrix otherwise"
                )
        stack, missing = _as_stack(r, "R", ids.size)
    use = np.flatnonzero(~missing[codes])
    tx, ty, w = _apply(stack[codes[use]], c[use], e[use])
    _refuse_infinity(w, "match {i} (by the R of its pair)", use)
    d = _distance(tx, ty, a[use], b[use])
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
) -> FloatArray:
    """``(d1 + d2 + d3 + d4) / 4`` for the pairs ``use`` (all matrices present)."""
    xr, yb = width[use] - 1, height[use] - 1
    zero = np.zeros(use.size)
    total = zero
    for cx, cy in ((zero, zero), (xr, zero), (zero, yb), (xr, yb)):  # corner order matters
        ex, ey, we = _apply(h_est[use], cx, cy)
        gx, gy, wt = _apply(h_true[use], cx, cy)
        _refuse_infinity(we, "H_est of pair {i}: a corner", use)
        _refuse_infinity(wt, "H_true of pair {i}: a corner", use)
        total = total + _distance(ex, ey, gx, gy)
    return total / 4


def _corner_inputs(
    h_true: ArrayLike, h_est: ArrayLike, width: ArrayLike, height: ArrayLike
) -> tuple[FloatArray, BoolArray, FloatArray, BoolArray, FloatArray, FloatArray]:
    ht, miss_t = _as_stack(h_true, "H_true")
    he, miss_e = _as_stack(h_est, "H_est", ht.shape[0])
    p = ht.shape[0]
    sizes = []
    for value, what in ((width, "width"), (height, "height")):
        s = _as_floats(value, what)
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
    4.7915... (the (w, h) corners would give 4.8).

    Args:
        h_true, h_est: (P, 3, 3), all NaN where missing.
        width, height: image size in pixels, one number or one per pair.

    Returns:
        (P,) errors in pixels; NaN where either homography is missing.

    Raises:
        InvalidInput: wrong shapes, a partly NaN matrix, a size that is not a whole number >= 1,
            a corner mapped to infinity.
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
) -> FloatArray:
    """Per pair and threshold, 1.0 if the homography is correct (``corner_error <= eps``), else 0.

    SuperPoint's homography estimation accuracy; the mean over pairs is the fraction of correct
    pairs. Edge cases: a missing H_est (failed estimation) counts as incorrect (0.0); a missing
    H_true gives NaN (the pair has no ground truth); an error equal to eps is correct.

    Args:
        h_true, h_est, width, height: as in :func:`corner_error`.
        eps: a threshold or a 1-D array of thresholds in pixels (finite, >= 0).

    Returns:
        (P, E) array of 0.0 / 1.0 / NaN.
    """
    ht, miss_t, he, miss_e, w, h = _corner_inputs(h_true, h_est, width, height)
    t = _as_thresholds(eps, "eps")
    out = np.zeros((ht.shape[0], t.size))
    use = np.flatnonzero(~miss_t & ~miss_e)
    err = _corner_error(ht, he, w, h, use)
    out[use] = (err[:, None] <= t[None, :]).astype(np.float64)
    out[miss_t] = np.nan
    return out
