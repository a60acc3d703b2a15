"""The precision/recall points every ranking metric is computed from (NumPy reference).

:func:`ranking_points` validates one row per item (``group``, ``scores``, ``labels``), sorts
each list by score under a tie policy (:data:`TIES`) and returns the :class:`Points` of every
list at once, without a Python loop per list; :func:`one_list` does the same for a single
list. :mod:`evalstore.core.segments` works on those points list by list, still vectorised, and
:mod:`evalstore.core.ranking` builds its metrics from both.

The conventions (scores, ``-inf`` for *not retrieved*, +1/-1/0 labels, ``n_positives``, the
tie policies, the point formulas) are in the docstring of :mod:`evalstore.core.ranking`.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral

import numpy as np
import numpy.typing as npt

from evalstore.errors import InvalidInput

__all__ = [
    "TIES",
    "Points",
    "RankedRows",
    "docid_order",
    "one_list",
    "ranked_rows",
    "ranking_points",
]

TIES = ("grouped", "optimistic", "pessimistic", "input", "docid")
_ORDERED = ("input", "docid")  # the policies that break ties by an order given per row

ArrayLike = npt.ArrayLike
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Points:
    """The precision/recall points of many ranked lists, list after list, in ranking order.

    Attributes:
        groups: (G,) the sorted distinct group codes; list ``g`` is ``groups[g]``.
        list_index: (M,) index into ``groups`` of each point.
        tp, fp: (M,) int64 cumulative true/false positives at each point.
        recall: (M,) ``tp / P`` (NaN where ``P == 0``).
        precision: (M,) ``tp / (tp + fp)``.
        n_positives: (G,) ``P`` of each list, after the override.
        n_negatives: (G,) ``N``: the -1 labels of each list, retrieved or not.
        start, count: (G,) offset of each list's first point and its number of points.
    """

    groups: np.ndarray
    list_index: IntArray
    tp: IntArray
    fp: IntArray
    recall: FloatArray
    precision: FloatArray
    n_positives: IntArray
    n_negatives: IntArray
    start: IntArray
    count: IntArray


# ----------------------------------------------------------------------------- validation


def _as_scores(scores: ArrayLike) -> FloatArray:
    try:
        s = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"scores must be numbers: {exc}") from None
    if s.ndim != 1:
        raise InvalidInput(f"scores must be one-dimensional, got shape {s.shape}")
    bad = ~(s < np.inf)  # NaN and +inf; -inf means "not retrieved"
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InvalidInput(
            f"score at index {i} is {s[i]}: NaN and +inf are not allowed "
            "(use -inf for an item that was not retrieved)"
        )
    return s


def _as_labels(labels: ArrayLike, n: int) -> npt.NDArray[np.int8]:
    lab = np.asarray(labels)
    if lab.dtype.kind not in "iuf" or lab.ndim != 1 or lab.shape[0] != n:
        raise InvalidInput(
            f"labels must be a 1-D array of +1/-1/0 numbers as long as the scores "
            f"({n}), got dtype {lab.dtype} and shape {lab.shape}"
        )
    ok = (lab == 1) | (lab == -1) | (lab == 0)
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        raise InvalidInput(f"label at index {i} is {lab[i]}: labels must be +1, -1 or 0 (ignored)")
    return lab.astype(np.int8)


def _as_ints(values: ArrayLike, n: int, what: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype.kind not in "iu" or arr.ndim != 1 or arr.shape[0] != n:
        raise InvalidInput(
            f"{what} must be a 1-D integer array of length {n}, "
            f"got dtype {arr.dtype} and shape {arr.shape}"
        )
    return arr if arr.dtype == np.uint64 else arr.astype(np.int64, copy=False)


def _check_ties(ties: str) -> None:
    if ties not in TIES:
        raise InvalidInput(f"unknown ties policy {ties!r}; expected one of {', '.join(TIES)}")


def _group_codes(group: np.ndarray) -> tuple[np.ndarray, IntArray]:
    """Sorted distinct codes and the index of each row's code.

    ``np.unique`` sorts; sorted input and codes in a compact range (the usual 0..G-1) avoid it.
    """
    if group.size == 0:
        return group[:0], np.zeros(0, dtype=np.int64)
    if (group[1:] >= group[:-1]).all():
        new = np.empty(group.size, dtype=bool)
        new[0] = True
        np.not_equal(group[1:], group[:-1], out=new[1:])
        return group[new], np.cumsum(new, dtype=np.int64) - 1
    lo, hi = group.min(), group.max()
    if int(hi) - int(lo) < 2 * group.size:
        offset = (group - lo).astype(np.int64)
        present = np.zeros(int(hi) - int(lo) + 1, dtype=bool)
        present[offset] = True
        table = np.cumsum(present, dtype=np.int64) - 1
        return np.flatnonzero(present).astype(group.dtype) + lo, table[offset]
    uniq, codes = np.unique(group, return_inverse=True)
    return uniq, codes.astype(np.int64).reshape(-1)


# ----------------------------------------------------------------------------- ranking


def _descending_key(s: FloatArray) -> npt.NDArray[np.uint64]:
    """uint64 keys whose ascending order is the descending order of the float scores."""
    s = s + 0.0  # turns -0.0 into 0.0, so that the two zeros tie
    sign = (s.view(np.int64) >> 63).view(np.uint64)  # all ones for negatives, else 0
    ascending = s.view(np.uint64) ^ (sign | np.uint64(1 << 63))
    return ~ascending


def _rank_rows(
    codes: IntArray,
    n_groups: int,
    s: FloatArray,
    pos: npt.NDArray[np.bool_],
    ties: str,
    order: np.ndarray | None,
) -> tuple[IntArray, np.ndarray, np.ndarray, IntArray]:
    """Sort the rows by (list, score descending, tie-break, input position).

    Returns the sorted list codes, descending score keys (equal keys = equal scores), positive
    flags and the permutation of the rows that sorts them. ``np.lexsort`` on (score, list)
    takes ~4 s for 10M rows. Instead: order the rows by the tie-break, then stably by list (a
    radix sort when codes fit 16 bits), then one stable uint64 sort on
    ``code << (64 - b) | key >> b`` (``b`` bits for the code), which is quick because each
    list is contiguous by then. Runs equal in that word but not in the key's ``b`` low bits
    (scores a few ulps apart) are rare; those runs alone are re-sorted.
    """
    perm = None
    if ties == "optimistic":
        perm = np.argsort((~pos).view(np.uint8), kind="stable")
    elif ties == "pessimistic":
        perm = np.argsort(pos.view(np.uint8), kind="stable")
    elif ties in _ORDERED and order is not None:
        perm = np.argsort(order, kind="stable")
    if perm is not None:
        codes = codes[perm]
    b = (n_groups - 1).bit_length()
    if b > 0 and (codes[1:] < codes[:-1]).any():
        by_list = np.argsort(codes.astype(np.uint16) if b <= 16 else codes, kind="stable")
        perm = by_list if perm is None else perm[by_list]
        codes = codes[by_list]
    desc = _descending_key(s if perm is None else s[perm])
    if b == 0:
        idx = np.argsort(desc, kind="stable")
    else:
        word = (codes.astype(np.uint64) << np.uint64(64 - b)) | (desc >> np.uint64(b))
        idx = np.argsort(word, kind="stable")
        w = word[idx]
        low = desc[idx] & np.uint64((1 << b) - 1)
        same = w[1:] == w[:-1]
        clash = same & (low[1:] != low[:-1])
        if clash.any():
            run = np.concatenate(([0], np.cumsum(~same)))
            bad = np.zeros(run[-1] + 1, dtype=bool)
            bad[run[1:][clash]] = True
            sel = np.flatnonzero(bad[run])
            idx[sel] = idx[sel][np.lexsort((low[sel], run[sel]))]
    perm = idx if perm is None else perm[idx]
    return codes[idx], desc[idx], pos[perm], perm


def _points(
    groups: np.ndarray,
    codes: IntArray,
    s: FloatArray,
    lab: npt.NDArray[np.int8],
    n_positives: ArrayLike | None,
    ties: str,
    order: np.ndarray | None,
) -> Points:
    n_groups = len(groups)
    n_pos = np.bincount(codes[lab == 1], minlength=n_groups).astype(np.int64)
    n_neg = np.bincount(codes[lab == -1], minlength=n_groups).astype(np.int64)
    if n_positives is not None:
        over = np.asarray(n_positives)
        if over.dtype.kind not in "iu" or over.shape != (n_groups,):
            raise InvalidInput(
                f"n_positives must be an integer array with one value per list "
                f"({n_groups}), got dtype {over.dtype} and shape {over.shape}"
            )
        short = over < n_pos
        if short.any():
            g = int(np.flatnonzero(short)[0])
            raise InvalidInput(
                f"n_positives of list {groups[g].item()!r} is {over[g]}, smaller than "
                f"its {n_pos[g]} positive labels"
            )
        n_pos = over.astype(np.int64)

    keep = np.flatnonzero((lab != 0) & (s > -np.inf))
    c, key, pos, _ = _rank_rows(
        codes[keep],
        n_groups,
        s[keep],
        lab[keep] == 1,
        ties,
        order[keep] if (ties in _ORDERED and order is not None) else None,
    )

    rows = np.bincount(c, minlength=n_groups)
    row_start = np.cumsum(rows) - rows
    cum = np.cumsum(pos, dtype=np.int64)
    tp = cum - np.concatenate(([0], cum))[row_start][c]
    fp = np.arange(c.size) - row_start[c] + 1 - tp
    if ties == "grouped":  # one point per distinct score: the last row of each tie
        last = np.ones(c.size, dtype=bool)
        last[:-1] = (c[1:] != c[:-1]) | (key[1:] != key[:-1])
        c, tp, fp = c[last], tp[last], fp[last]
    count = np.bincount(c, minlength=n_groups).astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        recall = tp / n_pos[c]
    return Points(
        groups=groups,
        list_index=c,
        tp=tp,
        fp=fp,
        recall=recall,
        precision=tp / (tp + fp),
        n_positives=n_pos,
        n_negatives=n_neg,
        start=np.cumsum(count) - count,
        count=count,
    )


def _checked(
    group: ArrayLike, scores: ArrayLike, labels: ArrayLike, ties: str, order: ArrayLike | None
) -> tuple[FloatArray, npt.NDArray[np.int8], np.ndarray, IntArray, IntArray | None]:
    """The validated rows: scores, labels, the sorted groups and each row's code, the order."""
    _check_ties(ties)
    if ties == "docid" and order is None:
        raise InvalidInput("ties 'docid' needs order: the item ids' ranks (docid_order)")
    s = _as_scores(scores)
    lab = _as_labels(labels, s.size)
    groups, codes = _group_codes(_as_ints(group, s.size, "group"))
    seq = None if order is None else _as_ints(order, s.size, "order")
    return s, lab, groups, codes, seq


def ranking_points(
    group: ArrayLike,
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    n_positives: ArrayLike | None = None,
    ties: str = "grouped",
    order: ArrayLike | None = None,
) -> Points:
    """The precision/recall points of many lists at once (no Python loop per list).

    Args:
        group: integer list code of each row (any ints; lists are their sorted distinct values).
        scores, labels: one row per item, as in the conventions of
            :mod:`evalstore.core.ranking`.
        n_positives: ``P`` of each list, aligned with the sorted distinct codes; None = count +1.
        ties: tie policy (:mod:`evalstore.core.ranking`).
        order: integer input order (``seq``) for ``ties="input"``, default the array position;
            for ``ties="docid"`` (required) the rank of each item id in decreasing order,
            :func:`docid_order`. Equal values keep array order. Ignored by the other policies.

    Returns:
        Points: per point tp, fp, recall, precision; per list P, N, start, count.

    Raises:
        InvalidInput: NaN/+inf score, bad label, lengths that differ, unknown ties, an
            ``n_positives`` smaller than a list's positive labels.
    """
    s, lab, groups, codes, seq = _checked(group, scores, labels, ties, order)
    return _points(groups, codes, s, lab, n_positives, ties, seq)


@dataclass(frozen=True)
class RankedRows:
    """The retrieved, non-ignored rows of many lists in ranking order (one row per item).

    Attributes:
        groups: (G,) the sorted distinct group codes.
        rows: (M,) index of each ranked row in the input arrays, list after list.
        list_index: (M,) index into ``groups`` of each row.
        rank: (M,) int64 its rank in its list, 1, 2, ...
        tie: (M,) int64 the number of its tie group, counted over all lists: under
            ``grouped`` the rows of one list with equal scores, else each row alone.
    """

    groups: np.ndarray
    rows: IntArray
    list_index: IntArray
    rank: IntArray
    tie: IntArray


def ranked_rows(
    group: ArrayLike,
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    ties: str = "grouped",
    order: ArrayLike | None = None,
) -> RankedRows:
    """The rows of :func:`ranking_points` in ranking order, one per item, for metrics that
    weigh each item (:mod:`evalstore.core.graded`). Raises what :func:`ranking_points` does."""
    s, lab, groups, codes, seq = _checked(group, scores, labels, ties, order)
    keep = np.flatnonzero((lab != 0) & (s > -np.inf))
    c, key, _, perm = _rank_rows(
        codes[keep],
        len(groups),
        s[keep],
        lab[keep] == 1,
        ties,
        seq[keep] if (ties in _ORDERED and seq is not None) else None,
    )
    rows = np.bincount(c, minlength=len(groups))
    row_start = np.cumsum(rows) - rows
    new = np.ones(c.size, dtype=bool)
    if ties == "grouped":
        new[1:] = (c[1:] != c[:-1]) | (key[1:] != key[:-1])
    return RankedRows(
        groups=groups,
        rows=keep[perm].astype(np.int64),
        list_index=c,
        rank=np.arange(c.size, dtype=np.int64) - row_start[c] + 1,
        tie=np.cumsum(new) - 1,
    )


def docid_order(items: ArrayLike) -> IntArray:
    """The order of ``ties="docid"``: each item's rank when the ids are sorted in decreasing
    byte order of their UTF-8 text, as trec_eval breaks ties of equal scores (``strcmp`` on
    the document numbers, the greater first).

    >>> docid_order(["d1", "d10", "d9"]).tolist()  # "d9" > "d10" > "d1" as text
    [2, 1, 0]
    """
    text = [str(i).encode() for i in np.asarray(items, dtype=object).tolist()]
    ranked = sorted(range(len(text)), key=lambda i: text[i], reverse=True)
    out = np.empty(len(text), dtype=np.int64)
    out[ranked] = np.arange(len(text), dtype=np.int64)
    return out


def one_list(scores: ArrayLike, labels: ArrayLike, n_positives: int | None, ties: str) -> Points:
    """The :class:`Points` of a single list (group code 0), as :func:`ranking_points` makes them.

    Raises:
        InvalidInput: as :func:`ranking_points`, or an ``n_positives`` that is not an integer.
    """
    _check_ties(ties)
    if ties == "docid":
        raise InvalidInput("ties 'docid' needs the item ids: ranking_points(order=docid_order)")
    s = _as_scores(scores)
    lab = _as_labels(labels, s.size)
    over = None
    if n_positives is not None:
        if not isinstance(n_positives, Integral) or isinstance(n_positives, bool):
            raise InvalidInput(f"n_positives must be an integer, got {n_positives!r}")
        over = np.array([int(n_positives)])
    return _points(
        np.zeros(1, dtype=np.int64), np.zeros(s.size, dtype=np.int64), s, lab, over, ties, None
    )
