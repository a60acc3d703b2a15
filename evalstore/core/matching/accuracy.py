"""The fraction of each pair's matches close to their ground truth: precision@sigma and MMA.

The conventions (one row per match, ``pairs``, the match distance) are in the docstring of
:mod:`evalstore.core.matching`.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from evalstore.core.geometry import as_1d
from evalstore.core.matching.pairs import as_thresholds, distance, pair_codes

__all__ = ["mma", "precision_at_sigma"]

ArrayLike = npt.ArrayLike
FloatArray = npt.NDArray[np.float64]


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
    a = as_1d(x1, "x1")
    n = a.size
    d = distance(a, as_1d(y1, "y1", n), as_1d(gx, "gx", n), as_1d(gy, "gy", n))
    t = as_thresholds(thresholds, what)
    ids, codes = pair_codes(pair, n, pairs)
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

    Edge cases: a pair without any match (listed in ``pairs`` only) scores 0, as in
    ``docs/metrics.md``; a distance exactly equal to sigma does not count (strict ``<``;
    compare :func:`mma`).

    Args:
        pair, x1, y1, gx, gy: one row per match (module conventions).
        sigmas: a threshold or a 1-D array of thresholds (finite, >= 0), in pixels.
        pairs: every pair id, including pairs without matches; default the ids in ``pair``.

    Returns:
        (pair_ids, values): sorted distinct pair ids, and (P, S) fractions in [0, 1].

    Raises:
        InvalidInput: NaN/infinite coordinate, lengths that differ, bad sigma, a match whose pair
            is not in ``pairs``.

    Two matches of pair "a", 5 and 9 px from their truth (0, 0): below 6 and 9 only the first
    (9 is not below 9), below 3 neither:

    >>> ids, p = precision_at_sigma(["a", "a"], [3.0, 9.0], [4.0, 0.0], [0.0, 0.0], [0.0, 0.0])
    >>> ids.tolist(), p.tolist()
    (['a'], [[0.0, 0.5, 0.5]])
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
    equal to t counts: the matches 5 and 9 px off are both within 9 px.

    >>> mma(["a", "a"], [3.0, 9.0], [4.0, 0.0], [0.0, 0.0], [0.0, 0.0], (4, 5, 9))[1].tolist()
    [[0.0, 0.5, 1.0]]
    """
    return _fraction_within(pair, x1, y1, gx, gy, thresholds, pairs, True, "thresholds")
