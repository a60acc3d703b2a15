"""Intersection over union of counts: per group, pooled (micro) and averaged (macro)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from evalstore.errors import InvalidInput

__all__ = ["iou", "iou_macro", "iou_micro"]

ArrayLike = npt.ArrayLike
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


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

    Counts are summed exactly as integers, then divided in float64. Edge case:
    ``TP + FP + FN == 0`` -> NaN.

    Raises:
        InvalidInput: counts that are negative, not whole numbers, or of different lengths.

    >>> iou([3, 0], [1, 0], [2, 0])  # 3 / (3 + 1 + 2); nothing counted
    array([0.5, nan])
    """
    t, total = _iou_counts(tp, fp, fn)
    out = np.full(t.size, np.nan)
    ok = total > 0
    out[ok] = t[ok] / total[ok]
    return out


def iou_micro(tp: ArrayLike, fp: ArrayLike, fn: ArrayLike) -> float:
    """Pooled IoU: ``sum TP / sum (TP + FP + FN)`` over the groups; NaN when the sum is 0.

    >>> iou_micro([3, 1], [1, 2], [2, 1])  # (3 + 1) / (6 + 4)
    0.4
    """
    t, total = _iou_counts(tp, fp, fn)
    denominator = int(total.sum())
    return int(t.sum()) / denominator if denominator else float("nan")


def iou_macro(tp: ArrayLike, fp: ArrayLike, fn: ArrayLike) -> float:
    """Mean of the per-group :func:`iou`, leaving NaN groups out; NaN if every group is NaN.

    >>> iou_macro([3, 1, 0], [1, 2, 0], [2, 1, 0])  # (1/2 + 1/4) / 2, the empty group left out
    0.375
    """
    values = iou(tp, fp, fn)
    ok = ~np.isnan(values)
    return float(np.mean(values[ok])) if ok.any() else float("nan")
