"""Single-label classification metrics (NumPy): top-1 and top-k accuracy, balanced accuracy,
macro and micro F1 of the top-1 classes, and the expected calibration error.

The input is a score matrix, one row per sample and one column per class (the classes in
list order), built by :func:`sample_matrix` from the ranked-list layout: one list per class,
one item per sample, label +1 in the list of the sample's true class and -1 in the others. A
row labelled 0 is no candidate (its class is neither the top-1 nor counted above the true
class); a score of ``-inf`` (NULL in the store) ranks below every score.

Ties of the top score, under each policy (``sql/lib/single_label.sql`` is the SQL twin):

- ``input`` (and ``docid``, which orders a list's items, not a sample's classes): tied
  classes ranked in list order, the first column first (``np.argmax``);
- ``optimistic``: the true class first among its ties; ``pessimistic``: last;
- ``grouped``: the expected value over the orders of the ties. A sample whose true class
  ties with m classes (itself included) below r others is a top-k hit with probability
  ``min(max((k - r) / m, 0), 1)``; its top-1 is each of the m' classes at the top score with
  weight 1/m'. Accuracy, top-k accuracy, balanced accuracy and micro F1 are linear in these,
  so they are the expected values; macro F1 is the F1 of the expected counts and ece the
  calibration error of the expected accuracies (not the expectations of those ratios).

Sums are taken exactly rounded (``math.fsum``), as the SQL's ``sum_exact``. Example: three
samples, classes a, b, c; the second sample ties a and b at the top:

>>> s = SampleMatrix(np.array(["a", "b", "c"]), np.array(["s1", "s2", "s3"]),
...     np.array([[0.7, 0.2, 0.1], [0.4, 0.4, 0.2], [0.1, 0.3, 0.6]]),
...     np.ones((3, 3), dtype=bool), np.array([0, 1, 1]))
>>> hits(s, "input", 1).tolist(), hits(s, "grouped", 1).tolist()
([1.0, 0.0, 0.0], [1.0, 0.5, 0.0])
>>> float(f1_micro(s, "optimistic")), f1_per_class(s, "input").tolist()
(0.6666666666666666, [0.6666666666666666, 0.0, 0.0])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evalstore.errors import InvalidInput

__all__ = [
    "SampleMatrix",
    "Summary",
    "accuracy_of",
    "accuracy_per_class",
    "bin_edges",
    "bin_of",
    "class_sums",
    "confidences",
    "ece",
    "f1_micro",
    "f1_micro_of",
    "f1_of",
    "f1_per_class",
    "hits",
    "sample_cells",
    "sample_matrix",
    "summarize",
    "top1",
]


@dataclass(frozen=True)
class SampleMatrix:
    """The samples of one single-label run.

    Attributes:
        classes: (C,) the class ids, in list order.
        samples: (S,) the sample ids.
        scores: (S, C) float64 scores, ``-inf`` where NULL.
        candidate: (S, C) False where the row is labelled 0.
        truth: (S,) the column of each sample's true class.
    """

    classes: np.ndarray
    samples: np.ndarray
    scores: np.ndarray
    candidate: np.ndarray
    truth: np.ndarray


def sample_matrix(
    group: Sequence[object] | np.ndarray,
    items: Sequence[object] | np.ndarray,
    scores: np.ndarray,
    labels: np.ndarray,
    class_order: Sequence[object] | np.ndarray,
) -> SampleMatrix:
    """The score matrix of ranked lists in the single-label layout.

    Args:
        group: (n,) the class (list) of each row.
        items: (n,) the sample (item) of each row.
        scores: (n,) float64 scores, ``-inf`` for NULL.
        labels: (n,) +1 for the sample's true class, -1 for the others, 0 for no candidate.
        class_order: the class ids in list order (list_id).

    Raises:
        InvalidInput: a sample without exactly one +1 label, or missing from a class's list.
    """
    classes = np.asarray(list(class_order), dtype=object)
    column = {c: j for j, c in enumerate(classes.tolist())}
    item_list = np.asarray(items, dtype=object).tolist()
    sample_ids = list(dict.fromkeys(item_list))
    row = {s: i for i, s in enumerate(sample_ids)}
    # each row's cell, then every array filled at once (not one row at a time)
    i_of = np.fromiter(map(row.__getitem__, item_list), dtype=np.int64, count=len(item_list))
    j_of = np.fromiter(map(column.__getitem__, np.asarray(group, dtype=object).tolist()),
                       dtype=np.int64, count=len(item_list))  # fmt: skip
    return sample_cells(classes, sample_ids, i_of, j_of, scores, labels)


def sample_cells(
    classes: Sequence[object] | np.ndarray,
    sample_ids: Sequence[object] | np.ndarray,
    i_of: np.ndarray,
    j_of: np.ndarray,
    scores: np.ndarray,
    labels: np.ndarray,
) -> SampleMatrix:
    """:func:`sample_matrix` of rows given as cells: row ``r`` is sample ``i_of[r]`` (of
    ``sample_ids``) in class ``j_of[r]`` (of ``classes``, in list order). Raises as
    :func:`sample_matrix`.

    >>> s = sample_cells(["a", "b"], ["s1"], np.array([0, 0]), np.array([0, 1]),
    ...                  np.array([0.8, 0.2]), np.array([1, -1]))
    >>> s.scores.tolist(), s.truth.tolist()
    ([[0.8, 0.2]], [0])
    """
    classes = np.asarray(list(classes), dtype=object)
    sample_ids = list(sample_ids)
    n_s, n_c = len(sample_ids), classes.size
    matrix = np.full((n_s, n_c), np.nan)
    candidate = np.zeros((n_s, n_c), dtype=bool)
    present = np.zeros((n_s, n_c), dtype=bool)
    label_of = np.asarray(labels)
    matrix[i_of, j_of] = np.asarray(scores, dtype=np.float64)
    present[i_of, j_of] = True
    candidate[i_of, j_of] = label_of != 0
    is_positive = label_of == 1
    positives = np.bincount(i_of[is_positive], minlength=n_s)
    truth = np.zeros(n_s, dtype=np.int64)
    truth[i_of[is_positive]] = j_of[is_positive]
    for i in np.flatnonzero((positives != 1) | ~present.all(axis=1)).tolist()[:1]:
        s = sample_ids[i]
        if positives[i] != 1:
            raise InvalidInput(
                f"sample {s!r} has {positives[i]} positive labels (+1); a single-label metric "
                "needs exactly one"
            )
        raise InvalidInput(
            f"sample {s!r} is in {int(present[i].sum())} of the {n_c} class lists; it "
            "needs a row in each"
        )
    ids = np.empty(n_s, dtype=object)
    ids[:] = sample_ids
    return SampleMatrix(classes, ids, matrix, candidate, truth)


def _placed(s: SampleMatrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per sample: the candidates above its true class, tied with it (itself included), and
    tied with it in an earlier column."""
    true_score = s.scores[np.arange(s.truth.size), s.truth][:, None]
    above = ((s.scores > true_score) & s.candidate).sum(axis=1)
    same = (s.scores == true_score) & s.candidate
    before = (same & (np.arange(s.classes.size)[None, :] < s.truth[:, None])).sum(axis=1)
    return above, same.sum(axis=1), before


def hits(s: SampleMatrix, ties: str, k: int) -> np.ndarray:
    """(S,) 1.0 where the true class is among the sample's top ``k`` under ``ties``, else
    0.0; under ``grouped`` the probability over the orders of the ties."""
    above, tied, before = _placed(s)
    if ties == "grouped":
        return np.clip((k - above) / tied, 0.0, 1.0)
    if ties == "optimistic":
        return (above < k).astype(np.float64)
    if ties == "pessimistic":
        return (above + tied <= k).astype(np.float64)
    return (above + before < k).astype(np.float64)  # input, docid: list order


def top1(s: SampleMatrix, ties: str) -> np.ndarray:
    """(S, C) the weight of each class as the sample's top-1: 1 for the one class under the
    rankings of one class at a time, 1/m for each of m classes at the top under grouped."""
    at_top = (s.scores == confidences(s)[:, None]) & s.candidate
    if ties == "grouped":
        return at_top / at_top.sum(axis=1, keepdims=True)
    rows = np.arange(s.truth.size)
    first = np.argmax(at_top, axis=1)  # the first column at the top
    if ties == "optimistic":
        first = np.where(at_top[rows, s.truth], s.truth, first)
    elif ties == "pessimistic":
        others = at_top.copy()
        others[rows, s.truth] = False
        first = np.where(others.any(axis=1), np.argmax(others, axis=1), s.truth)
    weights = np.zeros(s.scores.shape)
    weights[rows, first] = 1.0
    return weights


def confidences(s: SampleMatrix) -> np.ndarray:
    """(S,) each sample's top score among its candidates."""
    return np.max(np.where(s.candidate, s.scores, -np.inf), axis=1)


@dataclass(frozen=True)
class Summary:
    """What the single-label metrics read of each sample of a run under one tie policy
    (:func:`summarize`): each metric is a sum over samples of these, so a draw of samples
    (:meth:`take`) is summarised by drawing them, without the score matrix.

    Attributes:
        classes: (C,) the class ids, in list order.
        truth: (S,) the column of each sample's true class.
        hits: (S,) its top-``k`` hit (:func:`hits`; the ``k`` of :func:`summarize`).
        hits1: (S,) its top-1 hit.
        conf: (S,) its confidence (:func:`confidences`).
        tp: (S,) the weight of its true class as its top-1 (:func:`top1`).
        top_sample, top_class, top_weight: (E,) the non-zero weights of :func:`top1`: the
            sample, the class and the weight of each.
    """

    classes: np.ndarray
    truth: np.ndarray
    hits: np.ndarray
    hits1: np.ndarray
    conf: np.ndarray
    tp: np.ndarray
    top_sample: np.ndarray
    top_class: np.ndarray
    top_weight: np.ndarray

    @property
    def n_classes(self) -> int:
        return int(self.classes.size)

    def take(self, counts: np.ndarray) -> Summary:
        """The summary of the samples drawn ``counts[i]`` times each, copies side by side."""
        rows = np.repeat(np.arange(counts.size), counts)
        starts = np.cumsum(counts) - counts
        each = counts[self.top_sample]
        entry = np.repeat(np.arange(self.top_sample.size), each)
        copy = np.arange(entry.size) - np.repeat(np.cumsum(each) - each, each)
        return Summary(self.classes, self.truth[rows], self.hits[rows], self.hits1[rows],
                       self.conf[rows], self.tp[rows], starts[self.top_sample[entry]] + copy,
                       self.top_class[entry], self.top_weight[entry])  # fmt: skip


def summarize(s: SampleMatrix, ties: str, k: int = 1) -> Summary:
    """The :class:`Summary` of the samples ``s`` under ``ties``, top-``k`` hits in ``hits``."""
    if s.truth.size == 0:  # no sample (and so no class): nothing to rank
        empty, none = np.zeros(0), np.zeros(0, np.int64)
        return Summary(s.classes, s.truth, empty, empty, empty, empty, none, none, empty)
    w = top1(s, ties)
    sample, column = np.nonzero(w)
    rows = np.arange(s.truth.size)
    h1 = hits(s, ties, 1)
    return Summary(s.classes, s.truth, h1 if k == 1 else hits(s, ties, k), h1,
                   confidences(s), w[rows, s.truth], sample, column,
                   w[sample, column])  # fmt: skip


def class_sums(values: np.ndarray, keys: np.ndarray, n: int) -> np.ndarray:
    """(n,) the sum of ``values`` per key ``0 <= key < n``, exactly rounded (``math.fsum``'s
    value; whole numbers below 2^53 are summed exactly by ``np.bincount`` itself).

    >>> class_sums(np.array([0.1, 0.2, 1.0]), np.array([0, 0, 2]), 3).tolist()
    [0.30000000000000004, 0.0, 1.0]
    """
    if not values.size or (np.all(values == np.floor(values)) and np.all(np.abs(values) < 2**52)):
        return np.bincount(keys, weights=values, minlength=n).astype(np.float64)
    order = np.argsort(keys, kind="stable")
    bounds = np.searchsorted(keys[order], np.arange(n + 1)).tolist()
    ordered = values[order].tolist()
    return np.array([math.fsum(ordered[bounds[j] : bounds[j + 1]]) for j in range(n)])


def _total(values: np.ndarray) -> float:
    return float(class_sums(values, np.zeros(values.size, np.int64), 1)[0])


def accuracy_of(u: Summary) -> tuple[np.ndarray, float]:
    """The share of each class's samples that are top-``k`` hits (its recall; NaN for a class
    without samples), and the share of all samples (NaN without samples)."""
    n_true = np.bincount(u.truth, minlength=u.n_classes)
    sums = class_sums(u.hits, u.truth, u.n_classes)
    per_class = np.full(u.n_classes, np.nan)
    np.divide(sums, n_true, out=per_class, where=n_true > 0)
    run = _total(u.hits) / u.hits.size if u.hits.size else math.nan
    return per_class, run


def f1_of(u: Summary) -> np.ndarray:
    """(C,) each class's F1 = 2 TP / (n_true + n_pred) of the top-1 classes; NaN for a class
    neither true nor predicted (scikit-learn leaves it out of the macro mean)."""
    tp = class_sums(u.tp, u.truth, u.n_classes)
    n_pred = class_sums(u.top_weight, u.top_class, u.n_classes)
    n_true = np.bincount(u.truth, minlength=u.n_classes).astype(np.float64)
    out = np.full(u.n_classes, np.nan)
    np.divide(2.0 * tp, n_true + n_pred, out=out, where=(n_true + n_pred) != 0)
    return out


def f1_micro_of(u: Summary) -> float:
    """F1 pooled over classes, 2 TP / (2 TP + FP + FN): TP the (expected) correct top-1s,
    FP = FN the others; NaN without samples."""
    if not u.hits1.size:
        return math.nan
    tp, fp = _total(u.hits1), _total(1.0 - u.hits1)
    return 2.0 * tp / (2.0 * tp + fp + fp)


def accuracy_per_class(s: SampleMatrix, ties: str, k: int) -> tuple[np.ndarray, float]:
    """:func:`accuracy_of` the samples ``s``: each class's top-``k`` recall, and the run's."""
    return accuracy_of(summarize(s, ties, k))


def f1_per_class(s: SampleMatrix, ties: str) -> np.ndarray:
    """:func:`f1_of` the samples ``s``."""
    return f1_of(summarize(s, ties))


def f1_micro(s: SampleMatrix, ties: str) -> float:
    """:func:`f1_micro_of` the samples ``s``."""
    return f1_micro_of(summarize(s, ties))


def bin_edges(n_bins: int) -> np.ndarray:
    """torchmetrics' ``linspace(0, 1, n_bins + 1)`` in float64 (NumPy's values: edge i is
    ``i * (1 / n_bins)``, the last 1.0)."""
    return np.linspace(0.0, 1.0, n_bins + 1)


def bin_of(conf: np.ndarray, n_bins: int) -> np.ndarray:
    """The bin of each confidence: the edges at or below it, minus 1 (``torch.bucketize(c,
    edges, right=True) - 1``): an edge opens the bin above it, 1.0 is bin ``n_bins``."""
    return np.searchsorted(bin_edges(n_bins), conf, side="right") - 1


def ece(conf: np.ndarray, acc: np.ndarray, n_bins: int) -> float:
    """Expected calibration error, L1: sum over bins of ``|acc_b - conf_b| * n_b / n``, with
    ``acc_b``, ``conf_b`` the means of the bin's accuracies and confidences (torchmetrics'
    ``_binning_bucketize`` and ``_ce_compute``, Lightning-AI/torchmetrics
    src/torchmetrics/functional/classification/calibration_error.py at
    660df0d699c4da98d9f0abd7cdbc4798d300ab6e); NaN without samples.

    torchmetrics' binary example (its confidences and accuracies; tensor(0.2900)):

    >>> round(ece(np.array([0.25, 0.25, 0.55, 0.75, 0.75]), np.array([0, 0, 1, 1, 1.0]), 2), 12)
    0.29
    """
    if conf.size == 0:
        return math.nan
    bins = bin_of(conf, n_bins)
    terms = []
    for b in np.unique(bins):
        inside = bins == b
        n = int(inside.sum())
        conf_b = math.fsum(conf[inside].tolist()) / n
        acc_b = math.fsum(acc[inside].tolist()) / n
        terms.append(abs(acc_b - conf_b) * (n / conf.size))
    return math.fsum(terms)
