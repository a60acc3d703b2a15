"""Slow, obviously correct definitions of the single-label classification metrics, for the
parity test (:data:`SLOW`, merged into ``definitions.SLOW``).

One sample at a time, from the definitions in docs/metrics.md ("Single-label
classification"): the classes are the lists, in list order (``list_ids``, else the order of
their first rows); a sample's candidates are its rows labelled +1 or -1; its true class is
the +1. Each tie policy orders the classes of a sample by score, greater first, and then:
``input`` / ``docid`` by list order, ``optimistic`` the true class first, ``pessimistic`` the
true class last; ``grouped`` averages over every order of the tied classes (enumerated here:
a hit's probability is the share of orders in which it is a hit, a class's top-1 weight the
share of orders in which it comes first). Sums are exact (fractions).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from evalstore.metrics.registry import Params, RankedLists, Result

Sample = tuple[Any, dict[Any, float], Any]  # (sample id, class -> score, true class)


def _samples(inputs: RankedLists) -> tuple[list[Any], list[Sample]]:
    """The classes in list order and each sample's candidate scores and true class."""
    key = inputs.list_ids if inputs.list_ids is not None else inputs.order
    key = np.arange(len(inputs.group)) if key is None else key
    first: dict[Any, int] = {}
    candidates: dict[Any, dict[Any, float]] = {}
    truth: dict[Any, Any] = {}
    assert inputs.items is not None
    for g, item, score, label, k in zip(
        inputs.group.tolist(), inputs.items.tolist(), inputs.scores.tolist(),
        inputs.labels.tolist(), np.asarray(key).tolist(), strict=True,
    ):  # fmt: skip
        first[g] = min(first.get(g, k), k)
        candidates.setdefault(item, {})
        if label != 0:
            candidates[item][g] = score
        if label == 1:
            truth[item] = g
    classes = sorted(first, key=lambda g: first[g])
    return classes, [(s, candidates[s], truth[s]) for s in candidates]


def _orders(sample: Sample, classes: list[Any], ties: str) -> list[list[Any]]:
    """The orders of the sample's candidates under ``ties`` (several under grouped)."""
    _, scores, true = sample
    position = {c: i for i, c in enumerate(classes)}
    if ties == "grouped":
        levels = sorted(set(scores.values()), reverse=True)
        groups = [[c for c in classes if c in scores and scores[c] == v] for v in levels]
        return [
            [c for group in choice for c in group]
            for choice in itertools.product(*(list(itertools.permutations(g)) for g in groups))
        ]
    if ties == "optimistic":
        second = {true: 0}
    elif ties == "pessimistic":
        second = {true: 1}
    else:
        second = {}
    ranked = sorted(scores, key=lambda c: (-scores[c], second.get(c, 0.5), position[c]))
    return [ranked]


def _hit(sample: Sample, classes: list[Any], ties: str, k: int) -> Fraction:
    orders = _orders(sample, classes, ties)
    return Fraction(sum(sample[2] in order[:k] for order in orders), len(orders))


def _top1(sample: Sample, classes: list[Any], ties: str) -> dict[Any, Fraction]:
    orders = _orders(sample, classes, ties)
    return {c: Fraction(sum(o[0] == c for o in orders), len(orders)) for c in classes}


def _ids(values: list[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _accuracy(k_of: Callable[[Params], int], run_row: bool) -> Callable[[Any, Params], Result]:
    def slow(inputs: RankedLists, params: Params) -> Result:
        classes, samples = _samples(inputs)
        k = k_of(params)
        hits = {s[0]: _hit(s, classes, params.ties, k) for s in samples}
        per_class = []
        for c in classes:
            mine = [hits[s[0]] for s in samples if s[2] == c]
            per_class.append(float(sum(mine) / len(mine)) if mine else math.nan)
        if not run_row:
            return Result(_ids(classes), np.array(per_class))
        run = float(sum(hits.values()) / len(samples))
        return Result(_ids([None, *classes]), np.array([run, *per_class]))

    return slow


top1_accuracy = _accuracy(lambda p: 1, run_row=True)
top1_accuracy.__doc__ = "Share of samples whose first class is the true one; per class: recall."
topk_accuracy = _accuracy(lambda p: p.k or 5, run_row=True)
topk_accuracy.__doc__ = "Share of samples with the true class among the first k (default 5)."
balanced_accuracy = _accuracy(lambda p: 1, run_row=False)
balanced_accuracy.__doc__ = "Each class's top-1 recall (the run's value: their mean)."


def f1_macro(inputs: RankedLists, params: Params) -> Result:
    """Each class's F1 = 2 TP / (2 TP + FP + FN) of the top-1 classes; NaN where
    2 TP + FP + FN = 0 (the run's value: their mean)."""
    classes, samples = _samples(inputs)
    tp = dict.fromkeys(classes, Fraction(0))
    fp = dict.fromkeys(classes, Fraction(0))
    fn = dict.fromkeys(classes, Fraction(0))
    for s in samples:
        for c, w in _top1(s, classes, params.ties).items():
            if c == s[2]:
                tp[c] += w
                fn[c] += 1 - w
            else:
                fp[c] += w
    values = [
        float(2 * tp[c] / (2 * tp[c] + fp[c] + fn[c])) if 2 * tp[c] + fp[c] + fn[c] else math.nan
        for c in classes
    ]
    return Result(_ids(classes), np.array(values))


def f1_micro(inputs: RankedLists, params: Params) -> Result:
    """F1 = 2 TP / (2 TP + FP + FN) pooled over classes: TP the correct top-1s, FP the
    samples predicted as a class not theirs, FN the samples whose class was not predicted."""
    classes, samples = _samples(inputs)
    tp = fp = fn = Fraction(0)
    for s in samples:
        for c, w in _top1(s, classes, params.ties).items():
            tp += w if c == s[2] else 0
            fp += w if c != s[2] else 0
            fn += w if c != s[2] else 0  # the sample's own class missed, as often
    return Result(_ids([None]), np.array([float(2 * tp / (2 * tp + fp + fn))]))


def ece(inputs: RankedLists, params: Params) -> Result:
    """Expected calibration error, L1: bins [e_i, e_(i+1)) of the edges e_i = i * (1 / B)
    (e_B = 1.0, a bin of its own), each sample in the bin of its largest score (the
    confidence); sum over bins of |mean accuracy - mean confidence| * n_bin / n, the accuracy
    1 where the first class is the true one (under grouped its probability)."""
    classes, samples = _samples(inputs)
    at = [15.0] if params.at is None else list(params.at)
    values = []
    for b in at:
        n_bins = int(b)
        edges = [i * (1.0 / n_bins) for i in range(n_bins)] + [1.0]
        bins: dict[int, list[tuple[Fraction, Fraction]]] = {}
        for s in samples:
            conf = max(s[1].values())
            where = sum(1 for e in edges if e <= conf) - 1
            bins.setdefault(where, []).append((Fraction(conf), _hit(s, classes, params.ties, 1)))
        total = Fraction(0)
        for members in bins.values():
            # the mean as torchmetrics takes it: the sum (here exact, rounded once) / n
            conf_b = float(sum(c for c, _ in members)) / len(members)
            acc_b = float(sum(a for _, a in members)) / len(members)
            total += Fraction(abs(acc_b - conf_b)) * Fraction(len(members), len(samples))
        values.append(float(total))
    return Result(_ids([None] * len(at)), np.array(values), np.array(at))


#: Registry name -> slow definition.
SLOW = {
    "top1_accuracy": top1_accuracy,
    "topk_accuracy": topk_accuracy,
    "balanced_accuracy": balanced_accuracy,
    "f1_macro": f1_macro,
    "f1_micro": f1_micro,
    "ece": ece,
}
