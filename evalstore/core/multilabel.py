"""Multi-label classification: per-class and overall precision, recall and F1 (CP, CR, CF1,
OP, OR, OF1), over every label whose score passes a threshold or over each image's top k.

The numbers of ML-GCN, ASL and Query2Label, as ML-GCN's ``AveragePrecisionMeter`` defines
them (megvii-research/ML-GCN ``util.py`` @ 311f521031b91c59a8bd65a1afe3e6cf9a97916a,
``evaluation``, ``overall`` and ``overall_topk``). For each class c of the run, over its
images:

- ``Ng[c]`` = its positive labels (+1), ``Np[c]`` = its predicted labels, ``Nc[c]`` = its
  predicted positives; a label is predicted when ``score >= threshold`` (ML-GCN: 0, on
  logits) and, in the top-k form, it is also among its image's ``k`` highest-scoring labels;
- the guard for classes never predicted: ``Np[c] = 1`` where ``Np[c] == 0`` (a precision of 0);
- ``OP = sum Nc / sum Np``, ``OR = sum Nc / sum Ng``, ``OF1 = 2 OP OR / (OP + OR)``;
- ``CP = sum (Nc / Np) / C``, ``CR = sum (Nc / Ng) / C``, ``CF1 = 2 CP CR / (CP + CR)``, C
  the number of classes (lists) of the run.

Edge cases, as ML-GCN's 0/0: a class without positives makes ``CR`` (and ``CF1``) NaN; a run
without positives makes ``OR`` NaN; ``OP + OR == 0`` makes ``OF1`` NaN (likewise ``CF1``).

evalstore's rows map onto ML-GCN's target matrix so: a label of 0 (ignored) and an (image,
class) pair without a row count nowhere, neither predicted nor positive, and take no place in
the top k (ML-GCN with that entry's target 0 and its score -inf); a score of -inf (NULL in the
store) is never predicted. ML-GCN's own ``overall()`` would count a VOC "difficult" target (0)
as a negative: ingest such labels as -1 to get that.

Top k: an image's non-ignored labels ranked by score, ties ordered by ``ties``: ``input`` (the
class whose list comes first in the input first), ``docid`` (the greater class id as text
first, as the ranking metrics' docid), ``optimistic`` / ``pessimistic`` (positives / negatives
first, then ``input``'s order); ``grouped``: a tie group straddling the cut is in the top k
with the fraction ``(k - n_above) / n_tied`` of each of its labels, so ``Np`` and ``Nc`` are
their expected values over random orders of the ties (``OR`` and ``CR``, linear in them, are
then the expected values themselves; the ratios are of the expected counts).

Per-class values (the rows of each class): ``cp`` its precision ``Nc / Np`` (guarded), ``cr``
its recall ``Nc / Ng``, ``cf1`` its F1 ``2 Nc / (Np + Ng)`` (NaN when both are 0). The run's
``cf1`` is not their mean, it is ``2 CP CR / (CP + CR)``; ``op``, ``or``, ``of1`` have the
run's value only.

>>> cls = np.array([0, 1, 0, 1])       # two classes, two images
>>> image = np.array([0, 0, 1, 1])
>>> scores = np.array([0.9, 0.2, 0.6, 0.7])
>>> labels = np.array([1, 1, -1, 1])
>>> rows = rows_of(cls, image, scores, labels, np.array([0, 1]), np.array([0.5]))
>>> nc, np_, ng = rows.counts()
>>> nc[:, 0].tolist(), np_[:, 0].tolist(), ng.tolist()
([1.0, 1.0], [2.0, 1.0], [1, 2])
>>> {name: float(overall(name, nc, np_, ng)[0]) for name in ("op", "or", "cp", "cr")}
{'op': 0.6666666666666666, 'or': 0.6666666666666666, 'cp': 0.75, 'cr': 0.75}
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["NAMES", "TIES", "Rows", "overall", "per_class", "rows_of"]

#: The six numbers, in ML-GCN's names (lower case).
NAMES = ("cp", "cr", "cf1", "op", "or", "of1")

#: The tie policies of the top-k form.
TIES = ("grouped", "optimistic", "pessimistic", "input", "docid")


def _in_top_k(
    cls: np.ndarray,
    image: np.ndarray,
    scores: np.ndarray,
    labels: np.ndarray,
    class_order: np.ndarray,
    k: int,
    ties: str,
) -> np.ndarray:
    """Each row's share of its image's top k (1 or 0; a fraction at a grouped tie)."""
    share = np.zeros(scores.size)
    for img in np.unique(image):
        rows = np.flatnonzero(image == img)
        s = scores[rows]
        if ties == "grouped":
            above = (s[None, :] > s[:, None]).sum(axis=1)
            tied = (s[None, :] == s[:, None]).sum(axis=1)
            share[rows] = np.clip(k - above, 0, tied) / tied
            continue
        if ties not in TIES:
            raise ValueError(f"unknown ties {ties!r}")
        second = class_order[cls[rows]]
        first = {"optimistic": -labels[rows], "pessimistic": labels[rows]}.get(
            ties, np.zeros(rows.size, dtype=np.int64)
        )
        ranked = np.lexsort((second, first, -s))
        share[rows[ranked[:k]]] = 1.0
    return share


@dataclass(frozen=True)
class Rows:
    """A run's non-ignored rows as its counts sum them (:func:`rows_of`): each row's image,
    class, predicted weight at each threshold (its share of the top k where that form
    applies) and whether it is positive. A draw of images weights its rows (:meth:`counts`).

    >>> rows = rows_of(np.array([0, 1]), np.array([0, 0]), np.array([0.9, 0.2]),
    ...                np.array([1, 1]), np.array([0, 1]), np.array([0.5]))
    >>> [a.ravel().tolist() for a in rows.counts(np.array([3]))]  # the image drawn 3 times
    [[3.0, 0.0], [3.0, 0.0], [3.0, 3.0]]
    """

    n_class: int
    image: np.ndarray
    cls: np.ndarray
    predicted: np.ndarray
    positive: np.ndarray

    def counts(self, weight: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``Nc``, ``Np`` (each (C, T)) and ``Ng`` (C,); ``weight``: how often each image
        counts (a draw of the images, each drawn copy counted once)."""
        cls, n = self.cls, self.n_class
        if weight is None:
            ng = np.bincount(cls[self.positive], minlength=n)
            row = None
        else:
            row = weight[self.image].astype(np.float64)
            ng = np.bincount(cls, weights=row * self.positive, minlength=n)
        nc = np.zeros((n, self.predicted.shape[1]))
        np_ = np.zeros((n, self.predicted.shape[1]))
        for j in range(self.predicted.shape[1]):
            w = self.predicted[:, j] if row is None else self.predicted[:, j] * row
            np_[:, j] = np.bincount(cls, weights=w, minlength=n)
            nc[:, j] = np.bincount(cls, weights=w * self.positive, minlength=n)
        return nc, np_, ng


def rows_of(
    cls: np.ndarray,
    image: np.ndarray,
    scores: np.ndarray,
    labels: np.ndarray,
    class_order: np.ndarray,
    thresholds: np.ndarray,
    *,
    k: int | None = None,
    ties: str = "grouped",
) -> Rows:
    """The :class:`Rows` of a run, whose :meth:`Rows.counts` are ``Nc``, ``Np`` (each (C, T),
    T thresholds) and ``Ng`` (C,) of every class.

    Args:
        cls: (n,) the class code 0..C-1 of each (image, class) row.
        image: (n,) the image code of each row.
        scores: (n,) scores, ``-inf`` = never predicted.
        labels: (n,) +1, -1, or 0 (ignored: the row counts nowhere).
        class_order: (C,) each class's place in the tie order of the top k (lower first:
            ``input``'s and the second key of ``optimistic`` / ``pessimistic``; ``docid``'s).
        thresholds: (T,) a label is predicted when its score is ``>=`` the threshold.
        k: the top-k form's cut-off; None = the threshold form.
        ties: the order of equal scores in the top k.
    """
    n_class = class_order.size
    keep = labels != 0
    cls, image, scores, labels = cls[keep], image[keep], scores[keep], labels[keep]
    share = np.ones(scores.size)
    if k is not None:
        share = _in_top_k(cls, image, scores, labels, class_order, k, ties)
    predicted = np.empty((scores.size, thresholds.size))
    for j, t in enumerate(thresholds):
        predicted[:, j] = share * ((scores >= t) & (scores > -np.inf))
    return Rows(n_class, image, cls, predicted, labels == 1)


def _ratio(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    """a / b with 0 / 0 and x / 0 NaN, without NumPy's warning."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    out = np.full(np.broadcast(a, b).shape, np.nan)
    np.divide(a, b, out=out, where=b != 0)
    return out


def overall(name: str, nc: np.ndarray, np_: np.ndarray, ng: np.ndarray) -> np.ndarray:
    """The run's ``name`` (one of :data:`NAMES`) at each threshold, from :meth:`Rows.counts`."""
    guarded = np.where(np_ == 0, 1.0, np_)
    n_class = nc.shape[0]
    if name in ("op", "or", "of1"):
        op = nc.sum(axis=0) / guarded.sum(axis=0)
        o_r = _ratio(nc.sum(axis=0), float(ng.sum()))
        values = {"op": op, "or": o_r, "of1": _ratio(2 * op * o_r, op + o_r)}
        return values[name]
    cp = (nc / guarded).sum(axis=0) / n_class
    cr = _ratio(nc, ng[:, None].astype(np.float64)).sum(axis=0) / n_class
    values = {"cp": cp, "cr": cr, "cf1": _ratio(2 * cp * cr, cp + cr)}
    if name not in values:
        raise ValueError(f"unknown multi-label metric {name!r}")
    return values[name]


def per_class(name: str, nc: np.ndarray, np_: np.ndarray, ng: np.ndarray) -> np.ndarray | None:
    """Each class's value (C, T) of ``name``: its precision (``cp``), recall (``cr``) or F1
    (``cf1``); None for ``op``, ``or``, ``of1``, which have the run's value only."""
    if name == "cp":
        return nc / np.where(np_ == 0, 1.0, np_)
    if name == "cr":
        return _ratio(nc, np.broadcast_to(ng[:, None], nc.shape))
    if name == "cf1":
        return _ratio(2 * nc, np_ + ng[:, None])
    return None
