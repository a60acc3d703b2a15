"""The item bootstrap's replicates for a given seed are pinned: a change that makes them quicker
must leave every replicate bit for bit as it was (docs/statistics.md), so that ``compare`` gives
the same numbers for the same ``--seed``.

The digests are those of the replicates the code of 338868f computed (NumPy 2, x86-64): one
replicate at a time (a list of more than 2^19 items, as the 1.2e6-pair list of
bench/compare.py) and in blocks (small lists), for AP and fpr95, under ties grouped and
per rank. Tied scores appear only where the ranking keeps input order within a tie (several
lists, or per-rank ties): one list under grouped ties is ranked by an unstable sort, whose
order within a tie group (which item gets which random byte) may differ between NumPy builds.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from evalstore.analysis.multiplicities import BLOCK, byte_sum, prefix_sums
from evalstore.analysis.resampling import ItemLists
from evalstore.analysis.reweighting import reweighted_replicates
from evalstore.metrics.registry import METRICS, Params


def _items(n: int, n_lists: int, *, tied: bool, seed: int) -> ItemLists:
    rng = np.random.default_rng(seed)
    labels = np.where(rng.random(n) < 0.5, 1, -1).astype(np.int64)
    labels[rng.random(n) < 0.01] = 0  # a few ignored items
    base = rng.normal(size=n) + (labels == 1)
    scores = np.stack([base, base + 0.3 * rng.normal(size=n)])
    if tied:
        scores = np.round(scores, 1)
    return ItemLists(
        codes=np.sort(rng.integers(0, n_lists, n)),
        labels=labels,
        order=np.arange(n),
        items=None,
        scores=scores,
        missed=np.zeros(n_lists, dtype=np.int64),
        n_positives=np.full(n_lists, -1, dtype=np.int64),
    )


def _digest(values: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(values, dtype=np.float64).tobytes()).hexdigest()[:16]


CASES = {
    # (items, lists, tied, ties, metric, replicates): digest
    (600_000, 1, False, "grouped", "ap", 12): "681efc4b25b1a1cc",
    (600_000, 1, False, "grouped", "fpr95", 6): "74d67bb364800bb5",
    (600_000, 3, True, "grouped", "ap", 6): "afcf55e0785376ba",
    (600_000, 1, True, "optimistic", "ap", 4): "dee688f9bf3a181c",
    (3_000, 1, False, "grouped", "ap", 300): "d34a920e4b069403",
    (3_000, 4, True, "grouped", "fpr95", 300): "834d0ce101bbbc6d",
    (3_000, 2, True, "pessimistic", "ap", 300): "d6e4740b3f28b5f5",
}


@pytest.mark.parametrize(("n", "n_lists", "tied", "ties", "metric", "reps"), list(CASES))
def test_replicates_for_a_seed_are_as_they_were(
    n: int, n_lists: int, tied: bool, ties: str, metric: str, reps: int
) -> None:
    assert (n > BLOCK // 2) == (reps < 100)  # one replicate at a time, or in blocks
    items = _items(n, n_lists, tied=tied, seed=n + n_lists)
    out = reweighted_replicates(
        METRICS[metric], items, Params(ties=ties), np.random.default_rng(5), reps
    )
    assert out.shape == (2, reps) and np.isfinite(out).all()
    assert _digest(out) == CASES[(n, n_lists, tied, ties, metric, reps)]


@pytest.mark.parametrize("n", [0, 1, 2, 7, 64, 1_000, 600_001])
def test_prefix_sums_are_the_cumulative_sums(n: int) -> None:
    rng = np.random.default_rng(n)
    for w in (rng.poisson(1.0, n).astype(np.uint8), np.full(n, 254, dtype=np.uint8)):
        out = np.full((2, n + 1), -7, dtype=np.int32)
        row = prefix_sums(w, out)
        assert np.shares_memory(row, out)
        assert np.array_equal(row, np.r_[0, np.cumsum(w, dtype=np.int64)])
    # a strided view of a wider array (the draw's sums of each stratum)
    wide = np.zeros((2, n + 9), dtype=np.int32)
    row = prefix_sums(w, wide[:, 4 : n + 5])
    assert np.array_equal(wide[1, 4 : n + 5], np.r_[0, np.cumsum(w, dtype=np.int64)])
    assert not wide[1, :4].any() and not wide[1, n + 5 :].any()


def test_byte_sums_are_the_sums() -> None:
    rng = np.random.default_rng(3)
    counts = rng.poisson(1.0, 10_000).clip(0, 30).astype(np.uint8)
    counts[rng.random(10_000) < 0.05] = 30  # the largest count: 8 x 30 fits a byte
    for start, stop in [(0, 0), (0, 5), (3, 5), (3, 20), (8, 16), (1, 9999), (0, 10_000)]:
        assert byte_sum(counts, start, stop) == int(counts[start:stop].sum(dtype=np.int64))
