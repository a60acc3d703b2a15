"""The multiplicities of the item bootstrap's replicates, drawn fast: where each item's count
sits (:class:`Layout`), and one replicate's counts, the stratified multinomial.

A stratum of ``s`` slots gets i.i.d. Poisson(1) counts (:func:`poisson`), then its total ``T``
brought to ``s`` (:func:`to_size`): the ``s - T`` missing units drawn uniformly, or ``T - s`` of
the ``T`` units removed uniformly at random. Poisson counts given their total ``T`` are
multinomial(``T``, uniform); adding uniform draws, or keeping ``s`` of the ``T`` draws at
random, leaves multinomial(``s``, uniform): exactly the stratified bootstrap. docs/statistics.md
gives the scheme and its simulations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from evalstore.analysis.resampling import ItemLists

__all__ = [
    "BLOCK",
    "CDF",
    "CELLS",
    "Layout",
    "byte_sum",
    "distinct",
    "poisson",
    "prefix_sums",
    "sparse_nonzero",
    "stratified_weights",
    "to_size",
    "to_sizes",
]

#: Weights drawn and read together: a block holds ``BLOCK // size`` replicates (at least
#: one), a row each, so that a small list's replicates share each NumPy call.
BLOCK = 1 << 20

#: The 16-bit cells of the uniform whose Poisson(1) count :data:`TABLE` holds.
CELLS = 1 << 16
_REFINE = 255


def _poisson_cdf() -> np.ndarray:
    terms = [math.exp(-1.0) / math.factorial(k) for k in range(30)]
    return np.cumsum(terms)


#: The Poisson(1) CDF at 0..29 (doubles): the counts invert it.
CDF = _poisson_cdf()


def poisson_table(cells: int) -> np.ndarray:
    """The Poisson(1) count of each cell ``[h, h + 1) / cells`` of the uniform, or 255 where
    a break of :data:`CDF` falls inside the cell."""
    lo = np.arange(cells) / cells
    hi = (np.arange(cells) + 1) / cells
    at_lo = np.searchsorted(CDF, lo, side="right")
    below_hi = np.searchsorted(CDF, hi, side="left")
    return np.where(at_lo == below_hi, at_lo, _REFINE).astype(np.uint8)


TABLE = poisson_table(CELLS)


def byte_cells() -> tuple[np.ndarray, tuple[int, ...], int]:
    """``(cell, steps, first_break)``: a random byte ``v`` names the 8-bit cell ``cell[v]`` of
    the uniform (a bijection of the 256 cells, so the cell is uniform). The cells without a
    break of the CDF come first, in increasing order, so that the count of ``v`` below
    ``first_break`` is the number of ``steps`` it reaches; the cells holding a break come
    last, from ``v = first_break`` on."""
    table = poisson_table(256)
    whole = np.flatnonzero(table != _REFINE)
    breaks = np.flatnonzero(table == _REFINE)
    steps = np.flatnonzero(np.diff(table[whole].astype(np.int64))) + 1
    return np.r_[whole, breaks].astype(np.int64), tuple(int(s) for s in steps), int(whole.size)


_BYTE_CELL, _STEPS, _FIRST_BREAK = byte_cells()


def poisson(
    rng: np.random.Generator,
    out: np.ndarray,
    work: np.ndarray,
    bounds: tuple[int, ...] = (),
) -> list[int]:
    """Fill ``out`` (uint8) with i.i.d. Poisson(1) counts by inversion of :data:`CDF` (exact
    to its doubles; a count above 29 has probability below 1e-32 and is 30). A random byte
    per count names its 8-bit cell (:func:`byte_cells`), which decides the count by a few
    comparisons unless a break of the CDF falls inside it (2% of the draws); those take 8 more
    bits, a 16-bit cell (:data:`TABLE`), and the few whose 16-bit cell still holds a break a
    uniform double and the CDF itself. ``work``: a bool array of ``out``'s size.

    Returns the total count of each segment ``out[bounds[i]:bounds[i + 1]]``, one sum each
    (quicker than counting each comparison's hits per segment, then the refined ones')."""
    k = out.size
    v = rng.bit_generator.random_raw(-(-k // 8)).view(np.uint8)[:k]
    np.greater_equal(v, _STEPS[0], out=out.view(np.bool_))
    for step in _STEPS[1:]:
        np.add(out, np.greater_equal(v, step, out=work).view(np.uint8), out=out)
    np.greater_equal(v, _FIRST_BREAK, out=work)
    refine = sparse_nonzero(work[:k])
    if refine.size:
        low = rng.bit_generator.random_raw(-(-refine.size // 8)).view(np.uint8)[: refine.size]
        cells = (_BYTE_CELL[v[refine]] << 8) | low
        counts = TABLE[cells]
        deeper = np.flatnonzero(counts == _REFINE)
        if deeper.size:
            u = (cells[deeper] + rng.random(deeper.size)) / CELLS
            counts[deeper] = np.searchsorted(CDF, u, side="right")
        out[refine] = counts
    return [byte_sum(out, a, b) for a, b in pairwise(bounds)]


_BYTES = np.uint64(0x0101010101010101)


def byte_sum(counts: np.ndarray, start: int, stop: int) -> int:
    """The sum of ``counts[start:stop]`` (C-contiguous uint8 counts of at most 30): eight at a
    time, each 8-byte word times 0x0101010101010101 holding the sum of its bytes in its top
    byte (at most 240: no carry between bytes), those top bytes summed; the few counts before
    the first word and after the last one by one. About half the time of ``np.add.reduce``
    with a uint32 accumulator, which casts every count."""
    first = min(stop, -(-start // 8) * 8)  # the words' span: [first, last)
    last = max(first, stop // 8 * 8)
    total = int(counts[start:first].sum(dtype=np.int64) + counts[last:stop].sum(dtype=np.int64))
    if last > first:
        words = counts[first:last].view(np.uint64)
        total += int(np.right_shift(words * _BYTES, np.uint64(56)).sum(dtype=np.uint64))
    return total


def sparse_nonzero(mask: np.ndarray) -> np.ndarray:
    """``np.flatnonzero(mask)`` of a contiguous bool array with few True values (the 2% of
    draws to refine), quicker: the 8-byte words holding one found first, then their bytes."""
    whole = mask.size // 8 * 8
    words = mask[:whole].view(np.uint64)
    hit = np.flatnonzero(words != 0)
    at = np.flatnonzero(words[hit].view(np.bool_))
    found = hit[at >> 3] * 8 + (at & 7)
    if whole == mask.size:
        return found
    return np.concatenate([found, whole + np.flatnonzero(mask[whole:])])


def prefix_sums(w: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``[0, cumsum(w)]`` of the uint8 vector ``w`` in int32, written to ``out[1]`` and returned
    (``out``: int32 (2, ``w.size + 1``), its rows possibly views into wider arrays; row 0 is
    set to 0). OpenCV's integral image of the row ``w``: a vectorised prefix sum, about half
    the time of ``np.cumsum``'s loop on 600,000 weights, and the same integers (int32, as
    ``np.cumsum(w, dtype=np.int32)``)."""
    import cv2  # lazily: the one-replicate passes only

    got = cv2.integral(w.reshape(1, -1), sum=out, sdepth=cv2.CV_32S)
    if not np.shares_memory(got, out):  # pragma: no cover - OpenCV wrote elsewhere
        out[...] = got
    return out[1]


def to_size(
    rng: np.random.Generator,
    w: np.ndarray,
    extra: int,
    total: int = -1,
    cum: np.ndarray | None = None,
) -> bool:
    """Make the Poisson counts ``w`` (and ``extra`` virtual slots) the first counts of
    multinomial(``w.size + extra``, uniform), in place; ``total``: ``w``'s sum if known.
    ``cum``: int32 (2, ``w.size + 1``), :func:`prefix_sums`' form; where units are removed
    (their search sums the counts), ``cum[1]`` receives ``[0, cumsum]`` of the final counts
    and the call returns True."""
    k = w.size
    size = k + extra
    virtual = int(rng.poisson(extra)) if extra else 0
    total = (int(w.sum(dtype=np.int64)) if total < 0 else total) + virtual
    if total < size:  # the missing units, drawn uniformly
        drawn = rng.integers(0, size, size - total)
        drawn = drawn[drawn < k]
        if drawn.size and int(w[drawn].max()) + drawn.size > 254:  # a count could pass 254
            at, hits = np.unique(drawn, return_counts=True)
            raised = w[at] + hits
            if raised.max() > 254:  # pragma: no cover - probability ~1e-300
                raise OverflowError("a bootstrap multiplicity above 254")
            w[at] = raised
        else:
            np.add.at(w, drawn, 1)
    elif total > size:  # keep `size` of the `total` units, chosen at random
        gone = rng.choice(total, total - size, replace=False)
        gone = np.sort(gone[gone < total - virtual])  # the real items' units come first
        sums = np.cumsum(w, dtype=np.int32) if cum is None else prefix_sums(w, cum)[1:]
        # int32 units against the int32 sums (int64 ones made searchsorted cast every sum)
        at = np.searchsorted(sums, gone.astype(np.int32), side="right")
        np.subtract.at(w, at, 1)
        if cum is not None:  # the final counts' sums: one less past each removed unit
            steps = np.repeat(np.arange(at.size + 1, dtype=np.int32), np.diff(np.r_[0, at, k]))
            np.subtract(sums, steps, out=sums)
            return True
    return False


def to_sizes(rng: np.random.Generator, w: np.ndarray, extra: int) -> None:
    """:func:`to_size` of each row of ``w`` ((R, k) uint8: one stratum of R replicates), the
    rows together: every row's missing units drawn in one call, and the units removed from
    the rows whose Poisson total passed their size chosen together (:func:`distinct`)."""
    rows, k = w.shape
    size = k + extra
    virtual = np.asarray(rng.poisson(extra, rows) if extra else np.zeros(rows), dtype=np.int64)
    total = w.sum(axis=1, dtype=np.int64) + virtual
    short = size - total
    up = np.flatnonzero(short > 0)
    if up.size:  # the missing units, drawn uniformly
        row = np.repeat(up, short[up])
        col = rng.integers(0, size, row.size)
        row, col = row[col < k], col[col < k]
        if int(w.max()) + int(short.max()) > 254:  # a count could pass 254
            at, hits = np.unique(row * k + col, return_counts=True)
            raised = w[at // k, at % k] + hits
            if raised.max() > 254:  # pragma: no cover - probability ~1e-300
                raise OverflowError("a bootstrap multiplicity above 254")
            w[at // k, at % k] = raised
        else:
            np.add.at(w, (row, col), 1)
    down = np.flatnonzero(short < 0)
    if down.size:  # keep `size` of each row's units, chosen at random
        real = total[down] - virtual[down]  # the real items' units come first
        which, unit = distinct(rng, total[down], -short[down])
        kept = unit < real[which]
        which, unit = which[kept], unit[kept]
        offset = np.cumsum(real) - real  # the rows' cumulative sums end to end
        flat = (np.cumsum(w[down], axis=1, dtype=np.int64) + offset[:, None]).reshape(-1)
        at = np.searchsorted(flat, offset[which] + unit, side="right")
        np.subtract.at(w, (down[at // k], at % k), 1)


def distinct(
    rng: np.random.Generator, high: np.ndarray, count: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``count[j]`` distinct integers of ``[0, high[j])`` for each ``j``, a uniform subset:
    ``(j, value)`` pairs. Each row draws with replacement and keeps its first ``count[j]``
    distinct values in draw order (sequential sampling without replacement); a row whose
    draws held too few (rare) takes ``rng.choice`` instead."""
    extra = count * count // np.maximum(high, 1) * 2 + 4  # a few more than the duplicates
    row = np.repeat(np.arange(high.size), count + extra)
    value = rng.integers(0, high[row])
    _, first = np.unique(row * (1 << 32) + value, return_index=True)
    first.sort()  # the distinct draws, in draw order (rows in turn)
    row, value = row[first], value[first]
    rank = np.arange(row.size) - np.searchsorted(row, row)
    keep = rank < count[row]
    row, value = row[keep], value[keep]
    short = np.flatnonzero(np.bincount(row, minlength=high.size) < count)
    if short.size:
        keep = ~np.isin(row, short)
        row, value = row[keep], value[keep]
        more = [rng.choice(int(high[j]), int(count[j]), replace=False) for j in short]
        row = np.r_[row, np.repeat(short, count[short])]
        value = np.concatenate([value, *more])
    return row, value


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

    def draw(
        self,
        rng: np.random.Generator,
        out: np.ndarray,
        work: np.ndarray | None = None,
        cums: np.ndarray | None = None,
    ) -> tuple[bool, ...]:
        """The multiplicities of replicates into ``out``: one replicate's ((size,) uint8) or
        a block's, a row each ((B, size), C order): the Poisson counts of the whole block at
        once (they are i.i.d.), then each row's strata brought to their sizes in turn.
        ``work``: a bool array of ``out``'s size, kept between blocks (else allocated).
        ``cums``: one replicate's int32 (2, size + strata) zeros, stratum ``s`` at ``offset +
        s`` of row 1 (:meth:`cumulative`; row 0 is scratch, :func:`prefix_sums`): it gets the
        cumulative sums ``to_size`` computes; returns, per stratum, whether it did (empty for
        a block)."""
        rows = out.reshape(-1, self.size)
        # one replicate: each stratum's Poisson total counted by the draw itself
        bounds = (*(o for o, _, _ in self.strata), self.size) if rows.shape[0] == 1 else ()
        totals = poisson(rng, out.reshape(-1), np.empty(out.size, dtype=np.bool_) if work is None
                         else work[: out.size], bounds)  # fmt: skip
        if rows.shape[0] > 1:  # a block: each stratum of every row at once
            for offset, k, extra in self.strata:
                to_sizes(rng, rows[:, offset : offset + k], extra)
            return ()
        return tuple(
            to_size(rng, rows[0, offset : offset + k], extra, totals[s] if totals else -1,
                    None if cums is None else cums[:, offset + s : offset + s + k + 1])
            for s, (offset, k, extra) in enumerate(self.strata)
        )  # fmt: skip

    def cumulative(self, index: np.ndarray | slice) -> int:
        """The stratum whose slots ``index`` is, all of them in order (-1: none): its
        cumulative sums (:meth:`draw`'s ``cums``) are then those of ``index``'s weights."""
        if isinstance(index, slice):
            for s, (offset, k, _) in enumerate(self.strata):
                if (index.start, index.stop, index.step) == (offset, offset + k, None):
                    return s
        return -1


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
