"""Resampling the items of ranked lists: the statistics of comparisons on few lists.

With fewer than :data:`~evalstore.analysis.statistics.MIN_LISTS` lists (patch verification is
one list of pairs) resampling lists says nothing; the items of each list are resampled instead,
within their label (a stratified bootstrap: every resample keeps each list's numbers of positives
and negatives), and the metric is recomputed by its NumPy reference on every resample, for both
runs on the same resample (:func:`item_replicates`). Two runs also get a paired randomisation
test that swaps, item by item, the two runs' within-list ranks (:func:`rank_swap_p`).
AP and fpr95 reweight each run's fixed order instead (:mod:`evalstore.analysis.reweighting`,
no sort per resample); this module serves the other ranking metrics. docs/statistics.md gives
the formulas and the simulations that check them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import polars as pl

from evalstore.analysis import watching
from evalstore.analysis.statistics import CHUNK
from evalstore.metrics.registry import Metric, Params, RankedLists

__all__ = ["ItemLists", "first_alike", "item_replicates", "rank_swap_p", "strata"]


@dataclass(frozen=True)
class ItemLists:
    """The items of one task's lists, aligned across runs (same lists, items and labels).

    Attributes:
        codes: (n,) list code 0..L-1 of each item, items grouped by list.
        labels: (n,) +1 / -1 / 0.
        order: (n,) input order (``seq``) of the first run, for ``ties="input"``.
        items: (n,) item ids as text (``ties="docid"``), or None.
        scores: (runs, n) each run's scores (``-inf`` = not retrieved).
        missed: (L,) positives counted in ``n_positives`` but not among the items (0 if none).
        n_positives: (L,) the lists' overridden ``P``, or -1 where not overridden.
    """

    codes: np.ndarray
    labels: np.ndarray
    order: np.ndarray
    items: np.ndarray | None
    scores: np.ndarray
    missed: np.ndarray
    n_positives: np.ndarray

    @property
    def n_lists(self) -> int:
        return int(self.missed.size)


def strata(items: ItemLists) -> list[tuple[np.ndarray, int]]:
    """(item indices, virtual extra slots) of each (list, label) stratum."""
    key = items.codes * 3 + (items.labels + 1)
    order = np.argsort(key, kind="stable")
    bounds = np.flatnonzero(np.diff(key[order])) + 1
    out = []
    for part in np.split(order, bounds):
        if part.size == 0:
            continue
        list_code = int(items.codes[part[0]])
        extra = int(items.missed[list_code]) if items.labels[part[0]] == 1 else 0
        out.append((part, extra))
    for code in np.flatnonzero(items.missed > 0):  # every positive missed: a stratum of none
        if not np.any((items.codes == code) & (items.labels == 1)):
            out.append((np.empty(0, dtype=np.int64), int(items.missed[code])))
    return out


def _weights(items: ItemLists, rng: np.random.Generator, m: int) -> np.ndarray:
    """(m, n) integer bootstrap weights: each (list, label) stratum resampled to its size
    (positives counted in ``n_positives`` but missing from the items draw slots of their own
    and add no item)."""
    w = np.zeros((m, items.codes.size), dtype=np.int64)
    for part, extra in strata(items):
        size = part.size + extra
        if part.size == 0:
            continue
        counts = rng.multinomial(size, np.full(size, 1.0 / size), size=m)
        w[:, part] = counts[:, : part.size]
    return w


def _list_means(
    metric: Metric,
    items: ItemLists,
    scores: np.ndarray,
    index: np.ndarray,
    group: np.ndarray,
    m: int,
    params: Params,
    zero_without_positives: bool,
) -> np.ndarray:
    """(m,) the mean over lists of ``metric`` on ``m`` stacked resampled copies of the lists:
    item ``index[i]`` with score ``scores[i]`` in copy-list ``group[i]`` (= copy * L + list)."""
    n_lists = items.n_lists
    over = np.flatnonzero(items.n_positives >= 0)
    lists = None
    n_pos = None
    if over.size:
        lists = (np.arange(m)[:, None] * n_lists + over[None, :]).ravel()
        n_pos = np.tile(items.n_positives[over], m)
    ranked = RankedLists(
        group=group,
        scores=scores,
        labels=items.labels[index],
        order=items.order[index],
        items=None if items.items is None else items.items[index],
        lists=lists,
        n_positives=n_pos,
    )
    result = metric.reference(ranked, params)
    flat = np.full(m * n_lists, np.nan)
    flat[np.asarray(result.group, dtype=np.int64)] = result.value
    values = flat.reshape(m, n_lists)
    if zero_without_positives:
        values = np.nan_to_num(values, nan=0.0)
    with np.errstate(invalid="ignore"):
        counted = np.sum(~np.isnan(values), axis=1)
        return np.where(counted > 0, np.nansum(values, axis=1) / np.maximum(counted, 1), np.nan)


def first_alike(scores: np.ndarray) -> list[int]:
    """For each run (a row of ``scores``), the first run with the same scores: runs alike are
    resampled once."""
    return [next(q for q in range(r + 1) if np.array_equal(scores[q], scores[r]))
            for r in range(scores.shape[0])]  # fmt: skip


def _blocks(items: ItemLists, n: int) -> Iterator[tuple[int, int]]:
    step = max(1, CHUNK // max(1, items.codes.size))
    for start in range(0, n, step):
        yield start, min(n, start + step) - start


def item_replicates(
    metric: Metric,
    items: ItemLists,
    params: Params,
    rng: np.random.Generator,
    n_boot: int = 1000,
    zero_without_positives: bool = False,
) -> np.ndarray:
    """(runs, n_boot) the mean over lists of ``metric`` for each run on ``n_boot`` stratified
    resamples of the items (the same resample for every run: the comparison stays paired).
    Runs with identical scores are computed once."""
    runs = items.scores.shape[0]
    out = np.empty((runs, n_boot))
    first = first_alike(items.scores)
    distinct = sorted(set(first))
    n = items.codes.size
    for start, m in _blocks(items, n_boot):
        w = _weights(items, rng, m).ravel()
        index = np.repeat(np.tile(np.arange(n), m), w)
        group = np.repeat((np.arange(m)[:, None] * items.n_lists + items.codes[None, :]).ravel(), w)
        for r in distinct:
            out[r, start : start + m] = _list_means(
                metric,
                items,
                items.scores[r][index],
                index,
                group,
                m,
                params,
                zero_without_positives,
            )
        watching.replicates(out, first, start + m)
    for r in range(runs):
        out[r] = out[first[r]]
    return out


def _within_list_ranks(codes: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Each item's mid-rank within its list divided by the list's length (ties share a rank;
    ``-inf``, not retrieved, stays ``-inf``)."""
    frame = pl.DataFrame({"list": codes, "score": scores})
    ranks = frame.select((pl.col("score").rank("average") / pl.len()).over("list").alias("r"))[
        "r"
    ].to_numpy()
    return np.where(np.isneginf(scores), -np.inf, ranks)


def rank_swap_p(
    metric: Metric,
    items: ItemLists,
    params: Params,
    rng: np.random.Generator,
    n_perm: int = 1000,
    zero_without_positives: bool = False,
) -> float:
    """Paired randomisation test of two runs on the same items: each run's scores become
    within-list mid-ranks (scale-free, the same ranking), and each item's pair of ranks is
    swapped between the runs with probability 1/2. ``p = (1 + #{|diff*| >= |diff|}) /
    (n_perm + 1)``, the metric recomputed by its NumPy reference on every swap."""
    ranks = np.stack([_within_list_ranks(items.codes, s) for s in items.scores[:2]])
    n = items.codes.size
    index = np.arange(n)
    observed = (
        _list_means(metric, items, ranks[1], index, items.codes, 1, params, zero_without_positives)[
            0
        ]
        - _list_means(
            metric, items, ranks[0], index, items.codes, 1, params, zero_without_positives
        )[0]
    )
    if np.isnan(observed):
        return float("nan")
    tol = 1e-12 * max(1.0, abs(observed))
    hits = 0
    for start, m in _blocks(items, n_perm):
        swap = rng.random((m, n)) < 0.5
        a = np.where(swap, ranks[1], ranks[0]).ravel()
        b = np.where(swap, ranks[0], ranks[1]).ravel()
        tiled = np.tile(index, m)
        group = (np.arange(m)[:, None] * items.n_lists + items.codes[None, :]).ravel()
        diff = _list_means(
            metric, items, b, tiled, group, m, params, zero_without_positives
        ) - _list_means(metric, items, a, tiled, group, m, params, zero_without_positives)
        hits += int(np.sum(np.abs(diff) >= abs(observed) - tol))
        watching.swapped(start + m, hits)
    return (hits + 1) / (n_perm + 1)
