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
whose values these equal to rounding on the same weights (``tests/test_item_bootstrap.py``;
``grouped`` AP's quotients are float32, within ~2e-6 relatively: docs/statistics.md).

The weights (:func:`stratified_weights`, :mod:`evalstore.analysis.multiplicities`) are the
same stratified multinomial as that path's, drawn faster from another random stream: i.i.d.
Poisson(1) counts, then each stratum's total brought to its size. docs/statistics.md gives the
scheme and its simulations.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from evalstore.analysis import watching
from evalstore.analysis.grouped_ranking import one_grouped_list
from evalstore.analysis.multiplicities import BLOCK, Layout, prefix_sums, stratified_weights
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
        narrow: a weight times a TP fits int32 (TP is at most the positives' slots, a
            weight at most 254).
        pos_start, neg_start: (L + 1,) where each list's positives and negatives start.
        pos_stratum, neg_stratum: the stratum ``pos`` (``neg``) is (:meth:`Layout.cumulative`).
        work: the run's gathered weights, kept between replicates; shared: the passes' work
            arrays, which the runs of one call share (one run's pass at a time).
    """

    pos: np.ndarray | slice
    neg: np.ndarray | slice
    pos_list: np.ndarray
    tp_end: np.ndarray | slice
    fp_end: np.ndarray
    tp_base: np.ndarray | None
    fp_base: np.ndarray | None
    per_rank: bool
    narrow: bool
    pos_start: np.ndarray
    neg_start: np.ndarray
    pos_stratum: int = -1
    neg_stratum: int = -1
    work: dict[tuple[str, int], np.ndarray] = field(default_factory=dict, compare=False, repr=False)
    shared: dict[tuple[str, int], np.ndarray] = field(
        default_factory=dict, compare=False, repr=False
    )

    @staticmethod
    def ranked(items: ItemLists, scores: np.ndarray, ties: str) -> RankedRows:
        """The ranked rows (items) of one run under ``ties``."""
        if ties == "grouped" and items.n_lists == 1 and np.isfinite(scores.max(initial=0.0)):
            return one_grouped_list(items.labels, scores)
        order = items.order
        if ties == "docid":
            if items.items is None:
                raise InvalidInput("ties 'docid' needs the item ids (ItemLists.items)")
            order = docid_order(items.items)
        return ranked_rows(items.codes, scores, items.labels, ties=ties, order=order)

    @classmethod
    def of(
        cls,
        items: ItemLists,
        ranked: RankedRows,
        ties: str,
        layout: Layout,
        shared: dict[tuple[str, int], np.ndarray] | None = None,
    ) -> RunOrder:
        """The order of a run ranked as ``ranked`` (:meth:`ranked`) under ``ties`` (``shared``:
        the passes' work arrays of the other runs of the call, :attr:`shared`)."""
        rows = ranked.rows
        lab = items.labels[rows]
        is_pos, is_neg = lab == 1, lab == -1
        n_pos = np.cumsum(is_pos)  # positives ranked at or before each row
        n_neg = np.cumsum(is_neg)
        at = np.flatnonzero(is_pos)
        per_rank = ties != "grouped"
        if per_rank:
            tp_end, fp_end = n_pos[at] - 1, n_neg[at]
        elif ranked.tie[-1:].sum() == rows.size - 1:  # no ties: each row ends its group
            tp_end, fp_end = n_pos[at], n_neg[at]
        else:  # the last row of each tie group
            last = np.r_[np.flatnonzero(np.diff(ranked.tie)), rows.size - 1]
            end = last[ranked.tie[at]]
            tp_end, fp_end = n_pos[end], n_neg[end]
        tp_base = fp_base = None
        if items.n_lists == 1:  # every code is 0
            pos_list = np.zeros(at.size, dtype=np.int64)
            pos_start = np.array([0, at.size])
            neg_start = np.array([0, int(n_neg[-1:].sum())])
        else:
            codes = items.codes[rows]
            pos_list = codes[at]
            pos_start = np.searchsorted(pos_list, np.arange(items.n_lists + 1))
            neg_start = np.searchsorted(codes[is_neg], np.arange(items.n_lists + 1))
        if items.n_lists > 1:
            first = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])  # each list's start
            start_of = np.zeros(items.n_lists, dtype=np.int64)
            before_pos = np.r_[0, n_pos][first]
            before_neg = np.r_[0, n_neg][first]
            start_of[codes[first]] = np.arange(first.size)
            tp_base = before_pos[start_of[pos_list]]
            fp_base = before_neg[start_of[pos_list]]
        pos, neg = _slice_or(layout.slot[rows[is_pos]]), _slice_or(layout.slot[rows[is_neg]])
        return cls(
            pos,
            neg,
            pos_list,
            _slice_or(tp_end),
            fp_end,
            tp_base,
            fp_base,
            per_rank,
            (int(np.sum(items.labels == 1)) + int(items.missed.sum())) * 254 < 1 << 31,
            pos_start,
            neg_start,
            layout.cumulative(pos),
            layout.cumulative(neg),
            shared={} if shared is None else shared,
        )

    def _buffer(self, name: str, rows: int, size: int, dtype: type) -> np.ndarray:
        """A (rows, size) work array kept between blocks (no allocation, no page faults): the
        run's own for its gathered weights, else one the runs share (fewer bytes in cache)."""
        kept, key = self.work if name in ("wp", "wn") else self.shared, (name, size)
        held = kept.get(key)
        if held is None or held.shape[0] < rows:
            held = kept[key] = np.zeros((rows, size), dtype=dtype)
        return held[:rows]

    def weights(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The multiplicities of the ranked positives and negatives, in ranking order, from
        the weight vectors ``w`` of a block of replicates ((B, size) uint8, one row each, by
        :class:`Layout` slot; or one replicate's (size,)): two (B, k) arrays."""
        w = w.reshape(-1, w.shape[-1])
        return self._gather(w, self.pos, "wp"), self._gather(w, self.neg, "wn")

    def _gather(self, w: np.ndarray, index: np.ndarray | slice, name: str) -> np.ndarray:
        if isinstance(index, slice):
            return w[:, index]
        return _take(w, index, self._buffer(name, w.shape[0], index.size, np.uint8))

    def _cumulative(
        self, wp: np.ndarray, wn: np.ndarray, drawn: Drawn = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``[0, cumsum]`` along each row of the positives' weights ``wp`` and of the
        negatives' ``wn`` (:meth:`weights`); ``drawn``: the draw's (:meth:`Layout.draw`)
        ``cums`` and which strata it filled, used where one of them is ``pos`` or ``neg``."""
        rows = wp.shape[0]  # one replicate: two rows, prefix_sums' form (row 0 scratch)
        cum_tp = self._buffer("cum_tp", max(rows, 2), wp.shape[1] + 1, np.int32)
        cum_fp = self._buffer("cum_fp", max(rows, 2), wn.shape[1] + 1, np.int32)
        if rows > 1:  # column 0 stays 0
            np.cumsum(wp, axis=1, dtype=np.int32, out=cum_tp[:, 1:])
            np.cumsum(wn, axis=1, dtype=np.int32, out=cum_fp[:, 1:])
            return cum_tp, cum_fp
        drawn_tp = _drawn(drawn, self.pos, self.pos_stratum)  # where the draw did not sum
        drawn_fp = _drawn(drawn, self.neg, self.neg_stratum)
        if drawn_tp is None:
            prefix_sums(wp[0], cum_tp)
        if drawn_fp is None:
            prefix_sums(wn[0], cum_fp)
        return (cum_tp[1:] if drawn_tp is None else drawn_tp,
                cum_fp[1:] if drawn_fp is None else drawn_fp)  # fmt: skip

    def fp_at(self, wp: np.ndarray, wn: np.ndarray, m: np.ndarray) -> np.ndarray:
        """(B, L) per replicate and list, the weight of the negatives at the first point
        whose TP reaches ``m[list]`` (-1 where it never does), under the multiplicities
        ``wp``, ``wn`` (:meth:`weights`)."""
        cum_tp, cum_fp = self._cumulative(wp, wn)
        rows = np.arange(cum_tp.shape[0])
        out = np.full((rows.size, m.size), -1.0)
        for code in range(m.size):
            start, end = self.pos_start[code], self.pos_start[code + 1]
            target = cum_tp[:, start] + m[code]
            reached = cum_tp[:, end] >= target
            if reached.any():  # the first point at or past the target: TP grows along a row
                i = start + np.sum(cum_tp[:, start + 1 : end + 1] < target[:, None], axis=1)
                at = self.fp_end[np.minimum(i, self.fp_end.size - 1)]
                fp = cum_fp[rows, at] - cum_fp[:, self.neg_start[code]]
                out[reached, code] = fp[reached]
        return out

    def sums(self, wp: np.ndarray, wn: np.ndarray, n_lists: int, drawn: Drawn = None) -> np.ndarray:
        """(B, n_lists) ``P * AP`` of each replicate and list under the multiplicities
        ``wp``, ``wn`` (:meth:`weights`; ``drawn``: :meth:`_cumulative`)."""
        rows, k = wp.shape
        cum_tp, cum_fp = self._cumulative(wp, wn, drawn)
        tp = cum_tp[:, self.tp_end] if isinstance(self.tp_end, slice) else _take(
            cum_tp, self.tp_end, self._buffer("tp", rows, k, np.int32))  # fmt: skip
        fp = _take(cum_fp, self.fp_end, self._buffer("fp", rows, k, np.int32))
        if self.tp_base is not None and self.fp_base is not None:
            tp = tp - cum_tp[:, self.tp_base]
            fp = fp - cum_fp[:, self.fp_base]
        if not self.per_rank:
            den = np.add(tp, fp, out=fp)
            if self.tp_base is None and rows == 1:  # one list: den grows, 0 first
                den[0, : int(np.searchsorted(den[0], np.int32(0), side="right"))] = 1
            else:
                np.maximum(den, 1, out=den)  # 0 only where TP is 0 too
            if self.narrow:  # w TP in int32 (exact; over TP, no longer read), one division
                # in float32 (docs/statistics.md): integers below 2^24 exact (above, rounded
                # once), the quotient correctly rounded: within 1.8e-7 relatively
                terms = self._buffer("terms32", rows, k, np.float32)
                np.divide(np.multiply(tp, wp, out=tp), den, out=terms, dtype=np.float32,
                          casting="unsafe")  # fmt: skip
            else:
                terms = self._buffer("terms", rows, k, np.float64)
                np.multiply(np.divide(tp, den, out=terms), wp, out=terms)
        else:  # copy j of positive i: (TP_i + j) / (TP_i + FP_i + j)
            terms = np.zeros((rows, k))
            flat, tp, fp, wp = terms.reshape(-1), tp.reshape(-1), fp.reshape(-1), wp.reshape(-1)
            live = np.flatnonzero(wp)
            j = 1
            while live.size:
                t = tp[live] + j
                flat[live] += t / (t + fp[live])
                j += 1
                live = live[wp[live] >= j]
        if n_lists == 1:  # a pairwise sum along each row (float32 terms: in float32)
            return terms.sum(axis=1, keepdims=True).astype(np.float64)
        out = np.zeros((rows, n_lists))
        starts = self.pos_start[:-1]
        held = np.flatnonzero(starts < self.pos_start[1:])  # the lists with ranked positives
        if held.size:  # positives are ordered by list: one segment each (a sum in float64)
            out[:, held] = np.add.reduceat(terms, starts[held], axis=1, dtype=np.float64)
        return out


#: The draw's cumulative sums and the strata it filled (:meth:`Layout.draw`), or None.
Drawn = tuple[np.ndarray, tuple[bool, ...]] | None


def _drawn(drawn: Drawn, index: np.ndarray | slice, stratum: int) -> np.ndarray | None:
    """(1, k + 1) the draw's ``[0, cumsum]`` of the weights at ``index`` (or None)."""
    if drawn is None or stratum < 0 or not drawn[1][stratum] or not isinstance(index, slice):
        return None
    return drawn[0][1:2, index.start + stratum : index.stop + stratum + 1]


def _take(a: np.ndarray, index: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``a[:, index]`` into ``out`` (the 1-D loop for one row). The indices are valid by
    construction: "clip" skips take's bounds check."""
    if a.shape[0] == 1:
        np.take(a[0], index, out=out[0], mode="clip")
        return out
    return np.take(a, index, axis=1, out=out, mode="clip")


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
    metric: str,
    order: RunOrder,
    weights: tuple[np.ndarray, np.ndarray],
    n_pos: np.ndarray,
    n_neg: np.ndarray,
    drawn: Drawn = None,
) -> np.ndarray:
    """(B, L) ``metric`` of each replicate and list under the multiplicities ``weights``
    (:meth:`RunOrder.weights`; ``drawn``: :meth:`RunOrder._cumulative`; NaN where none)."""
    wp, wn = weights
    with np.errstate(invalid="ignore", divide="ignore"):
        if metric == "ap":
            return order.sums(wp, wn, n_pos.size, drawn) / n_pos
        # fpr95: FP / N at the first point with recall >= 0.95, 1 where recall never gets there
        fp = order.fp_at(wp, wn, _reaching(n_pos, 0.95))
        values = np.where(fp >= 0, fp / n_neg, 1.0)
    values[:, (n_neg == 0) | (n_pos == 0)] = np.nan
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
    shared: dict[tuple[str, int], np.ndarray] = {}  # the passes' work arrays, one set
    orders = {r: RunOrder.of(items, ranked[r], params.ties, layout, shared) for r in distinct}
    n_pos = _list_positives(items)
    n_neg = np.bincount(items.codes[items.labels == -1], minlength=items.n_lists).astype(float)
    out = np.empty((runs, n_boot))
    rows = max(1, min(n_boot, BLOCK // max(1, layout.size)))  # replicates drawn together
    w = np.empty((rows, layout.size), dtype=np.uint8)
    work = np.empty(w.size, dtype=np.bool_)
    # one replicate at a time: the cumulative sums to_size makes serve the first run's pass
    cums = np.zeros((2, layout.size + len(layout.strata)), np.int32) if rows == 1 else None
    for start in range(0, n_boot, rows):
        block = w[: min(rows, n_boot - start)]
        filled = layout.draw(rng, block, work, cums)
        drawn = None if cums is None else (cums, filled)
        # every run's weights gathered while the draw's are still in cache, then the passes
        gathered = {r: order.weights(block) for r, order in orders.items()}
        for r, order in orders.items():
            values = list_values(metric.name, order, gathered[r], n_pos, n_neg, drawn)
            if zero_without_positives:
                values = np.nan_to_num(values, nan=0.0)
            held = ~np.isnan(values)
            count = held.sum(axis=1)
            total = np.where(held, values, 0.0).sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                out[r, start : start + block.shape[0]] = np.where(count > 0, total / count, np.nan)
        watching.replicates(out, first, start + block.shape[0])
    for r in range(runs):
        out[r] = out[first[r]]
    return out
