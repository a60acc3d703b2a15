"""The item bootstrap of AP and fpr95 without a sort per replicate: the order is fixed, a
replicate reweights the items.

A stratified bootstrap resample of a ranked list is the list itself with item ``i`` present
``w_i`` times (its multiplicity in the resample): the copies of an item have its score, so they
sit together where the item sat, and the resample's ranking is the run's ranking with every item
repeated ``w_i`` times. Each run is ranked once (:func:`~evalstore.core.points.ranked_rows`,
under the tie policy); a replicate's AP is then a cumulative sum over that fixed order, O(n)
with no sort:

- ``grouped`` ties: one point per tie group, at its end, ``TP_g / (TP_g + FP_g)`` with the
  weighted counts; AP ``= (1/P) sum_{positive i} w_i TP_g(i) / (TP_g(i) + FP_g(i))``;
- per-rank policies: each copy is a point, ``AP = (1/P) sum_{positive i} sum_{j=1..w_i}
  (TP_i + j) / (TP_i + FP_i + j)`` with ``TP_i``, ``FP_i`` the weights ranked before ``i``;
- fpr95: ``FP / N`` at the first point whose weighted ``TP`` reaches the least ``m`` with
  ``m / P >= 0.95`` (1 where none does), found by a binary search of the cumulative sum.

``P`` of a list is the same in every replicate (the stratum of its positives keeps its size,
or the list's ``n_positives``), as in the sorting path (:mod:`evalstore.analysis.resampling`),
whose values these equal to rounding on the same weights (``tests/test_item_bootstrap.py``).

The weights (:func:`stratified_weights`) are the same stratified multinomial as that path's,
drawn faster: i.i.d. Poisson(1) counts (16 random bits and a table; the few draws that fall in
a cell holding a break of the CDF take a uniform double and the CDF itself), then the stratum's
total brought to its size: the missing units drawn uniformly, or the extra units (of the
Poisson total) removed uniformly at random. Poisson counts given their total ``T`` are
multinomial(``T``, uniform); adding ``s - T`` uniform draws, or keeping ``s`` of the ``T``
draws at random, leaves multinomial(``s``, uniform): exactly the stratified bootstrap, with
another random stream. docs/statistics.md gives the scheme and its simulations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from evalstore.analysis.resampling import ItemLists, first_alike
from evalstore.core.points import RankedRows, docid_order, ranked_rows
from evalstore.errors import InvalidInput
from evalstore.metrics.registry import Metric, Params

__all__ = [
    "FAST_METRICS",
    "Layout",
    "RunOrder",
    "fast",
    "list_values",
    "reweighted_replicates",
    "stratified_weights",
]

#: The metrics whose item bootstrap reweights a fixed order (the others sort every replicate).
FAST_METRICS = ("ap", "fpr95")

_CELLS = 1 << 16


def _poisson_cdf() -> np.ndarray:
    terms = [math.exp(-1.0) / math.factorial(k) for k in range(30)]
    return np.cumsum(terms)


_CDF = _poisson_cdf()
_REFINE = 255


def _poisson_table() -> np.ndarray:
    """Poisson(1) count of each 16-bit cell of the uniform ``[h, h + 1) / 2^16``, or
    :data:`_REFINE` where a break of the CDF falls inside the cell."""
    lo = np.arange(_CELLS) / _CELLS
    hi = (np.arange(_CELLS) + 1) / _CELLS
    at_lo = np.searchsorted(_CDF, lo, side="right")
    below_hi = np.searchsorted(_CDF, hi, side="left")
    return np.where(at_lo == below_hi, at_lo, _REFINE).astype(np.uint8)


_TABLE = _poisson_table()


def _poisson(rng: np.random.Generator, out: np.ndarray) -> None:
    """Fill ``out`` (uint8) with i.i.d. Poisson(1) counts by inversion of the CDF (exact to
    its doubles; a count above 29 has probability below 1e-32 and is 30)."""
    k = out.size
    cells = rng.bit_generator.random_raw(-(-k // 4)).view(np.uint16)[:k]
    np.take(_TABLE, cells, out=out)
    refine = np.flatnonzero(out == _REFINE)
    if refine.size:
        u = (cells[refine] + rng.random(refine.size)) / _CELLS
        out[refine] = np.searchsorted(_CDF, u, side="right")


def _to_size(rng: np.random.Generator, w: np.ndarray, extra: int) -> None:
    """Make the Poisson counts ``w`` (and ``extra`` virtual slots) the first counts of
    multinomial(``w.size + extra``, uniform), in place."""
    k = w.size
    size = k + extra
    virtual = int(rng.poisson(extra)) if extra else 0
    total = int(w.sum(dtype=np.int64)) + virtual
    if total < size:  # the missing units, drawn uniformly
        drawn = rng.integers(0, size, size - total)
        at, hits = np.unique(drawn[drawn < k], return_counts=True)
        raised = w[at] + hits
        if raised.size and raised.max() > 254:  # pragma: no cover - probability ~1e-300
            raise OverflowError("a bootstrap multiplicity above 254")
        w[at] = raised
    elif total > size:  # keep `size` of the `total` units, chosen at random
        gone = rng.choice(total, total - size, replace=False)
        gone = gone[gone < total - virtual]  # the real items' units come first
        at, hits = np.unique(
            np.searchsorted(np.cumsum(w, dtype=np.int32), gone, side="right"), return_counts=True
        )
        w[at] -= hits.astype(np.uint8)


@dataclass(frozen=True)
class Layout:
    """Where each item's multiplicity sits in a replicate's weight vector: the items of each
    (list, label) stratum together, labels +1 and -1 only (no metric reads the ignored ones),
    each stratum in the first run's ranking order (its not retrieved items last), so that the
    first run reads its weights in slices.

    Attributes:
        slot: (n,) each item's index in the weight vector (-1: label 0).
        strata: (offset, items, virtual slots) of each stratum.
        size: the weight vector's length.
    """

    slot: np.ndarray
    strata: tuple[tuple[int, int, int], ...]
    size: int

    @classmethod
    def of(cls, items: ItemLists, first_rows: np.ndarray) -> Layout:
        """The layout whose strata follow ``first_rows`` (the first run's ranked rows)."""
        n = items.codes.size
        ranked = np.zeros(n, dtype=bool)
        ranked[first_rows] = True
        seq = np.concatenate([first_rows, np.flatnonzero(~ranked)])  # ranked, then the rest
        seq = seq[items.labels[seq] != 0]
        key = items.codes[seq] * 2 + (items.labels[seq] == 1)  # (list, label) strata
        small = key.astype(np.uint16) if 2 * items.n_lists <= 1 << 16 else key  # radix sort
        seq = seq[np.argsort(small, kind="stable")]
        slot = np.full(n, -1, dtype=np.int64)
        slot[seq] = np.arange(seq.size)
        sizes = np.bincount(key, minlength=2 * items.n_lists)
        offsets = np.cumsum(sizes) - sizes
        out = tuple(
            (int(offsets[s]), int(sizes[s]), int(items.missed[s // 2]) if s % 2 else 0)
            for s in np.flatnonzero(sizes)
        )
        return cls(slot, out, int(seq.size))

    def draw(self, rng: np.random.Generator, out: np.ndarray) -> None:
        """One replicate's multiplicities into ``out`` (uint8, :attr:`size`)."""
        _poisson(rng, out)
        for offset, k, extra in self.strata:
            _to_size(rng, out[offset : offset + k], extra)


def stratified_weights(items: ItemLists, rng: np.random.Generator) -> np.ndarray:
    """(n,) int64 multiplicities of one stratified bootstrap resample: each (list, label)
    stratum multinomial over its items (and the slots of the positives in ``n_positives`` but
    not among the items, which add no item); ignored items (label 0) weigh 0 (no metric
    reads them)."""
    layout = Layout.of(items, np.arange(items.codes.size))
    w = np.empty(layout.size, dtype=np.uint8)
    layout.draw(rng, w)
    out = np.zeros(items.codes.size, dtype=np.int64)
    kept = layout.slot >= 0
    out[kept] = w[layout.slot[kept]]
    return out


def _slice_or(index: np.ndarray) -> np.ndarray | slice:
    """``index``, or the slice it spells when it is a run of consecutive integers."""
    if index.size == 0 or np.array_equal(index, np.arange(index[0], index[0] + index.size)):
        start = int(index[0]) if index.size else 0
        return slice(start, start + index.size)
    return index


@dataclass(frozen=True)
class RunOrder:
    """One run's ranking, fixed once, as the AP of a reweighted list reads it.

    Attributes:
        pos, neg: the weight-vector slots (:class:`Layout`) of the ranked positives and
            negatives, in ranking order (a slice where consecutive).
        pos_list: each ranked positive's list code.
        tp_end: per positive, the index into ``[0, cumsum(w[pos])]`` of its point's TP:
            the end of its tie group (``grouped``), or just before it (per-rank).
        fp_end: per positive, likewise into ``[0, cumsum(w[neg])]``.
        tp_base, fp_base: per positive, those indices at its list's start (None: one list).
        per_rank: every copy is a point (not ``grouped``).
        pos_start, neg_start: (L + 1,) where each list's positives and negatives start.
    """

    pos: np.ndarray | slice
    neg: np.ndarray | slice
    pos_list: np.ndarray
    tp_end: np.ndarray | slice
    fp_end: np.ndarray
    tp_base: np.ndarray | None
    fp_base: np.ndarray | None
    per_rank: bool
    pos_start: np.ndarray
    neg_start: np.ndarray
    work: dict[str, np.ndarray] = field(default_factory=dict, compare=False, repr=False)

    @staticmethod
    def ranked(items: ItemLists, scores: np.ndarray, ties: str) -> RankedRows:
        """The ranked rows (items) of one run under ``ties``."""
        order = items.order
        if ties == "docid":
            if items.items is None:
                raise InvalidInput("ties 'docid' needs the item ids (ItemLists.items)")
            order = docid_order(items.items)
        return ranked_rows(items.codes, scores, items.labels, ties=ties, order=order)

    @classmethod
    def of(cls, items: ItemLists, ranked: RankedRows, ties: str, layout: Layout) -> RunOrder:
        """The order of a run ranked as ``ranked`` (:meth:`ranked`) under ``ties``."""
        rows = ranked.rows
        lab = items.labels[rows]
        is_pos, is_neg = lab == 1, lab == -1
        n_pos = np.cumsum(is_pos)  # positives ranked at or before each row
        n_neg = np.cumsum(is_neg)
        at = np.flatnonzero(is_pos)
        per_rank = ties != "grouped"
        if per_rank:
            tp_end, fp_end = n_pos[at] - 1, n_neg[at]
        else:  # the last row of each tie group
            last = np.r_[np.flatnonzero(np.diff(ranked.tie)), rows.size - 1]
            end = last[ranked.tie[at]]
            tp_end, fp_end = n_pos[end], n_neg[end]
        codes = items.codes[rows]
        pos_list = codes[at]
        tp_base = fp_base = None
        if items.n_lists > 1:
            first = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])  # each list's start
            start_of = np.zeros(items.n_lists, dtype=np.int64)
            before_pos = np.r_[0, n_pos][first]
            before_neg = np.r_[0, n_neg][first]
            start_of[codes[first]] = np.arange(first.size)
            tp_base = before_pos[start_of[pos_list]]
            fp_base = before_neg[start_of[pos_list]]
        return cls(
            _slice_or(layout.slot[rows[is_pos]]),
            _slice_or(layout.slot[rows[is_neg]]),
            pos_list,
            _slice_or(tp_end),
            fp_end,
            tp_base,
            fp_base,
            per_rank,
            np.searchsorted(pos_list, np.arange(items.n_lists + 1)),
            np.searchsorted(codes[is_neg], np.arange(items.n_lists + 1)),
        )

    def _buffer(self, name: str, size: int, dtype: type) -> np.ndarray:
        """A work array kept between replicates (no allocation, no page faults, per call)."""
        if name not in self.work:
            self.work[name] = np.zeros(size, dtype=dtype)
        return self.work[name]

    def _cumulative(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The positives' weights in ranking order, and ``[0, cumsum]`` of them and of the
        negatives' weights, under the multiplicities ``w`` (uint8, by :class:`Layout` slot)."""
        k = self.fp_end.size
        wp = w[self.pos] if isinstance(self.pos, slice) else np.take(
            w, self.pos, out=self._buffer("wp", k, np.uint8))  # fmt: skip
        n_neg = self.neg.stop - self.neg.start if isinstance(self.neg, slice) else self.neg.size
        wn = w[self.neg] if isinstance(self.neg, slice) else np.take(
            w, self.neg, out=self._buffer("wn", n_neg, np.uint8))  # fmt: skip
        cum_tp = self._buffer("cum_tp", k + 1, np.int32)  # cum_tp[0] stays 0
        np.cumsum(wp, dtype=np.int32, out=cum_tp[1:])
        cum_fp = self._buffer("cum_fp", n_neg + 1, np.int32)
        np.cumsum(wn, dtype=np.int32, out=cum_fp[1:])
        return wp, cum_tp, cum_fp

    def fp_at(self, w: np.ndarray, m: np.ndarray) -> np.ndarray:
        """(L,) per list, the weight of the negatives at the first point whose TP reaches
        ``m[list]`` (-1 where it never does), under the multiplicities ``w``."""
        _, cum_tp, cum_fp = self._cumulative(w)
        out = np.full(m.size, -1.0)
        for code in range(m.size):
            start, end = self.pos_start[code], self.pos_start[code + 1]
            target = cum_tp[start] + m[code]
            if cum_tp[end] >= target:
                i = start + int(np.searchsorted(cum_tp[start + 1 : end + 1], target))
                out[code] = cum_fp[self.fp_end[i]] - cum_fp[self.neg_start[code]]
        return out

    def sums(self, w: np.ndarray, n_lists: int) -> np.ndarray:
        """(n_lists,) ``P * AP`` of each list under the multiplicities ``w`` (uint8, by
        :class:`Layout` slot)."""
        k = self.fp_end.size
        wp, cum_tp, cum_fp = self._cumulative(w)
        tp = cum_tp[self.tp_end] if isinstance(self.tp_end, slice) else np.take(
            cum_tp, self.tp_end, out=self._buffer("tp", k, np.int32))  # fmt: skip
        fp = np.take(cum_fp, self.fp_end, out=self._buffer("fp", k, np.int32))
        if self.tp_base is not None and self.fp_base is not None:
            tp = tp - cum_tp[self.tp_base]
            fp = fp - cum_fp[self.fp_base]
        if not self.per_rank:
            den = np.add(tp, fp, out=self._buffer("den", k, np.int32))
            if self.tp_base is None:  # one list: den grows along the ranking, 0 first
                den[: int(np.searchsorted(den, 0, side="right"))] = 1  # where TP is 0 too
            else:
                np.maximum(den, 1, out=den)  # 0 only where TP is 0 too
            terms = np.divide(tp, den, out=self._buffer("terms", k, np.float64))
            np.multiply(terms, wp, out=terms)
        else:  # copy j of positive i: (TP_i + j) / (TP_i + FP_i + j)
            terms = np.zeros(k)
            live = np.flatnonzero(wp)
            j = 1
            while live.size:
                t = tp[live] + j
                terms[live] += t / (t + fp[live])
                j += 1
                live = live[wp[live] >= j]
        if n_lists == 1:
            return np.array([terms.sum()])
        return np.bincount(self.pos_list, weights=terms, minlength=n_lists)


def fast(metric: Metric, params: Params) -> bool:
    """Whether ``metric``'s item bootstrap reweights a fixed order (:data:`FAST_METRICS`)."""
    return metric.path is None and metric.name in FAST_METRICS


def _list_positives(items: ItemLists) -> np.ndarray:
    """(L,) ``P`` of each list in every resample: ``n_positives`` where given, else the
    positives among its items (the stratum keeps its size)."""
    counted = np.bincount(items.codes[items.labels == 1], minlength=items.n_lists)
    return np.where(items.n_positives >= 0, items.n_positives, counted).astype(np.float64)


def _reaching(n_pos: np.ndarray, recall: float) -> np.ndarray:
    """(L,) the least TP whose ``TP / P`` (in floats) reaches ``recall``, as
    :func:`evalstore.core.segments.first_at_recall` finds it."""
    p = np.where(n_pos > 0, n_pos, 1)
    m = np.clip(np.ceil(recall * p), 0, p)
    while (down := (m > 0) & ((m - 1) / p >= recall)).any():
        m -= down
    while (up := (m < p) & (m / p < recall)).any():
        m += up
    return m.astype(np.int64)


def list_values(
    metric: str, order: RunOrder, w: np.ndarray, n_pos: np.ndarray, n_neg: np.ndarray
) -> np.ndarray:
    """(L,) ``metric`` of each list under the multiplicities ``w`` (NaN where it has none)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        if metric == "ap":
            return order.sums(w, n_pos.size) / n_pos
        # fpr95: FP / N at the first point with recall >= 0.95, 1 where recall never gets there
        fp = order.fp_at(w, _reaching(n_pos, 0.95))
        values = np.where(fp >= 0, fp / n_neg, 1.0)
    values[(n_neg == 0) | (n_pos == 0)] = np.nan
    return values


def reweighted_replicates(
    metric: Metric,
    items: ItemLists,
    params: Params,
    rng: np.random.Generator,
    n_boot: int = 1000,
    zero_without_positives: bool = False,
) -> np.ndarray:
    """(runs, n_boot) the mean of ``metric`` (one of :data:`FAST_METRICS`) over lists of each
    run on ``n_boot`` stratified resamples of the items (the same resample for every run),
    each run ranked once. Runs with identical scores are computed once."""
    runs = items.scores.shape[0]
    first = first_alike(items.scores)
    distinct = sorted(set(first))
    ranked = {r: RunOrder.ranked(items, items.scores[r], params.ties) for r in distinct}
    layout = Layout.of(items, ranked[distinct[0]].rows)
    orders = {r: RunOrder.of(items, ranked[r], params.ties, layout) for r in distinct}
    n_pos = _list_positives(items)
    n_neg = np.bincount(items.codes[items.labels == -1], minlength=items.n_lists).astype(float)
    out = np.empty((runs, n_boot))
    w = np.empty(layout.size, dtype=np.uint8)
    for b in range(n_boot):
        layout.draw(rng, w)
        for r, order in orders.items():
            values = list_values(metric.name, order, w, n_pos, n_neg)
            if zero_without_positives:
                values = np.nan_to_num(values, nan=0.0)
            kept = values[~np.isnan(values)]
            out[r, b] = kept.mean() if kept.size else np.nan
    for r in range(runs):
        out[r] = out[first[r]]
    return out
