"""What every matching metric shares: pair ids and their codes, thresholds, the match distance.

The conventions (one row per match, ``pairs``, the house distance formula) are in the
docstring of :mod:`evalstore.core.matching`.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from evalstore.core.geometry import as_floats
from evalstore.errors import InvalidInput

__all__ = ["as_ids", "as_thresholds", "distance", "match_distance", "pair_codes"]

ArrayLike = npt.ArrayLike
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


# ----------------------------------------------------------------------------- validation


def as_thresholds(values: ArrayLike, what: str) -> FloatArray:
    """A threshold or a 1-D array of thresholds, as a 1-D float64 array.

    Raises:
        InvalidInput: NaN/infinite, not 1-D, or a negative threshold (naming ``what``).
    """
    t = np.atleast_1d(as_floats(values, what))
    if t.ndim != 1:
        raise InvalidInput(f"{what} must be a number or a 1-D array, got shape {t.shape}")
    if (t < 0).any():
        i = int(np.flatnonzero(t < 0)[0])
        raise InvalidInput(f"{what} at index {i} is {t[i]}: thresholds must be >= 0")
    return t


def as_ids(values: ArrayLike, what: str) -> np.ndarray:
    """Pair ids as a 1-D array.

    Raises:
        InvalidInput: not 1-D, or a NaN id.
    """
    ids = np.asarray(values)
    if ids.ndim != 1:
        raise InvalidInput(f"{what} must be a 1-D array of pair ids, got shape {ids.shape}")
    if ids.dtype.kind == "f" and np.isnan(ids).any():
        raise InvalidInput(f"{what} at index {int(np.flatnonzero(np.isnan(ids))[0])} is NaN")
    return ids


def pair_codes(pair: ArrayLike, n: int, pairs: ArrayLike | None) -> tuple[np.ndarray, IntArray]:
    """The sorted distinct pair ids and, per match, the index of its pair among them.

    Raises:
        InvalidInput: not one id per match, ids that do not sort, a match whose pair is not in
            ``pairs``.
    """
    p = as_ids(pair, "pair")
    if p.size != n:
        raise InvalidInput(f"pair must have one id per match ({n}), got {p.size}")
    try:
        if pairs is None:
            ids, codes = np.unique(p, return_inverse=True)
            return ids, codes.astype(np.int64).reshape(-1)
        ids = np.unique(as_ids(pairs, "pairs"))
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


# ----------------------------------------------------------------------------- distance


def match_distance(x1: ArrayLike, y1: ArrayLike, gx: ArrayLike, gy: ArrayLike) -> FloatArray:
    """``d = sqrt((x1 - gx)*(x1 - gx) + (y1 - gy)*(y1 - gy))`` per match (the house formula).

    Raises:
        InvalidInput: shapes that differ or a NaN/infinite coordinate.

    >>> match_distance([3.0, 1.0], [4.0, 1.0], [0.0, 1.0], [0.0, 1.0])  # a 3-4-5 triangle; on it
    array([5., 0.])
    """
    a = as_floats(x1, "x1")
    b, c, e = as_floats(y1, "y1"), as_floats(gx, "gx"), as_floats(gy, "gy")
    if not a.shape == b.shape == c.shape == e.shape:
        raise InvalidInput(
            f"x1, y1, gx, gy must have the same shape, got {a.shape}, {b.shape}, {c.shape}, "
            f"{e.shape}"
        )
    return distance(a, b, c, e)


def distance(x1: FloatArray, y1: FloatArray, gx: FloatArray, gy: FloatArray) -> FloatArray:
    """:func:`match_distance` of arrays already checked."""
    dx = x1 - gx
    dy = y1 - gy
    return np.sqrt(dx * dx + dy * dy)
