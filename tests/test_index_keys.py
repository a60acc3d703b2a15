"""The list index of float64 scores in several lists ranks them by a sort of values (each
score's high bits with its position), then sorts the runs of equal high bits by the full
score; or, when no two distinct doubles differ only in the bits the list takes, keys them
by their high bits: the points and distinct scores equal a plain lexicographic sort's, in
many lists, either way."""

from __future__ import annotations

import numpy as np
import pytest

from evalstore.ingest.index import rank_lists


def reference(list_id: np.ndarray, score: np.ndarray, positive: np.ndarray) -> tuple:
    """The points (list_id, tp, n) of every positive, in order, and the distinct scores per
    list, from one lexicographic sort by list, then score from the highest."""
    score = score + 0.0
    order = np.lexsort((-score, list_id))
    lists, s, p = list_id[order], score[order], positive[order]
    points = []
    for lst in np.unique(lists):
        at = lists == lst
        ls, lp = s[at], p[at]
        for value in ls[lp]:
            points.append((int(lst), int(np.sum(lp & (ls >= value))), int(np.sum(ls >= value))))
    distinct = {int(lst): len(np.unique(s[lists == lst])) for lst in np.unique(lists)}
    return sorted(points), distinct


@pytest.mark.parametrize("close", [True, False])
@pytest.mark.parametrize("seed", [0, 1])
def test_float64_keys_of_many_lists_are_a_lexicographic_sort(seed: int, close: bool) -> None:
    """``close``: doubles a few units in the last place apart (ranked by their distinct
    values); else normal draws, which differ above the bits the list takes (keyed by their
    high bits)."""
    rng = np.random.default_rng(seed)
    size = 30_000
    list_id = (rng.integers(0, 300, size) + 2**31 - 400).astype(np.int32)
    base = rng.choice(np.array([0.1, -1 / 3, 1e300, -5e-324, 0.0, 2.5]), size)
    ulps = rng.integers(-3, 4, size)
    score = base + ulps * np.spacing(base)  # runs of doubles equal but for their last bits
    if not close:
        score = rng.standard_normal(size)
    score[rng.random(size) < 0.1] = 0.7  # ties
    score[::7] = -0.0
    positive = rng.random(size) < 0.3
    (ids, tp, n), (lists, n_scores) = rank_lists(list_id, score, positive)
    want_points, want_distinct = reference(list_id, score, positive)
    got = sorted(zip(ids.tolist(), tp.tolist(), n.tolist(), strict=True))
    assert got == want_points
    assert dict(zip(lists.tolist(), n_scores.tolist(), strict=True)) == want_distinct
    assert len(got) > 1000
