"""The NumPy twins of the single-label classification metrics: :mod:`evalstore.core.
single_label` over a run's :class:`~evalstore.metrics.references.RankedLists`, one row per
class and, where the run's value is not the mean over the classes, the run's row (group None).

Two samples, classes a and b; the second is wrong:

>>> lists = RankedLists(np.array(["a", "b", "a", "b"]), np.array([0.8, 0.2, 0.6, 0.4]),
...     np.array([1, -1, -1, 1]), items=np.array(["s1", "s1", "s2", "s2"], dtype=object))
>>> r = single_label_reference("top1_accuracy")(lists, Params())
>>> r.group.tolist(), r.value.tolist()  # the run, then a's recall, b's
([None, 'a', 'b'], [0.5, 1.0, 0.0])
"""

from __future__ import annotations

import numpy as np

from evalstore.core import single_label as core
from evalstore.errors import InvalidInput
from evalstore.metrics.references import Inputs, Params, RankedLists, Reference, Result
from evalstore.metrics.single_label_catalogue import BINS, TOPK_DEFAULT

__all__ = ["single_label_reference", "single_label_result", "single_label_samples", "summarize"]


def single_label_samples(lists: RankedLists) -> core.SampleMatrix:
    """The run's score matrix, its classes in list order (``list_ids``, else the order of
    each list's first row).

    Raises:
        InvalidInput: no item ids, or a sample unfit for single-label metrics.
    """
    if lists.items is None:
        raise InvalidInput("single-label metrics need the item ids (RankedLists.items)")
    group = np.asarray(lists.group, dtype=object)
    key = lists.list_ids
    if key is None:
        key = np.arange(group.size) if lists.order is None else np.asarray(lists.order)
    names = list(dict.fromkeys(group.tolist()))  # in order of first row
    code = {g: i for i, g in enumerate(names)}
    codes = np.fromiter(map(code.__getitem__, group.tolist()), np.int64, count=group.size)
    keys = np.asarray(key)
    least = np.full(len(names), keys.max() if keys.size else 0, dtype=keys.dtype)
    np.minimum.at(least, codes, keys)  # each class's least key; equal keys keep first rows' order
    order = [names[i] for i in np.argsort(least, kind="stable").tolist()]
    return core.sample_matrix(group, lists.items, lists.scores, lists.labels, order)


def _ids(values: list[object]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def single_label_result(name: str, u: core.Summary, params: Params) -> Result:
    """The twin's rows of the single-label metric ``name`` over the samples summarised by
    ``u`` (:func:`summarize`): one per class and, where the run's value is not the mean over
    the classes, the run's (group None). ``compare`` calls it on the samples it draws
    (:mod:`evalstore.analysis.run_value_pairs`)."""
    classes = u.classes.tolist()
    if name in ("top1_accuracy", "topk_accuracy", "balanced_accuracy"):
        per_class, run = core.accuracy_of(u)
        if name == "balanced_accuracy":
            return Result(_ids(classes), per_class)
        return Result(_ids([None, *classes]), np.concatenate([[run], per_class]))
    if name == "f1_macro":
        return Result(_ids(classes), core.f1_of(u))
    if name == "f1_micro":
        return Result(_ids([None]), np.array([core.f1_micro_of(u)]))
    if name != "ece":
        raise InvalidInput(f"{name} is not a single-label metric")
    at = np.asarray(BINS if params.at is None else params.at, dtype=np.float64)
    if u.truth.size == 0:  # no row, as in SQL
        return Result(_ids([]), np.zeros(0), np.zeros(0))
    values = np.array([core.ece(u.conf, u.hits1, int(b)) for b in at])
    return Result(_ids([None] * at.size), values, at)


def summarize(name: str, s: core.SampleMatrix, params: Params) -> core.Summary:
    """The summary of the samples ``s`` that the metric ``name`` reads: its hits at its
    cut-off (``topk_accuracy``'s ``k``, else 1), under the tie policy of ``params``."""
    k = (params.k or TOPK_DEFAULT) if name == "topk_accuracy" else 1
    return core.summarize(s, params.ties, k)


def single_label_reference(name: str) -> Reference:
    """The twin of the single-label metric ``name`` (``top1_accuracy``, ``topk_accuracy``,
    ``balanced_accuracy``, ``f1_macro``, ``f1_micro``, ``ece``)."""

    def reference(inputs: Inputs, params: Params) -> Result:
        if not isinstance(inputs, RankedLists):
            raise InvalidInput(f"{name} reads RankedLists, got {type(inputs).__name__}")
        s = single_label_samples(inputs)
        return single_label_result(name, summarize(name, s, params), params)

    reference.__name__ = reference.__qualname__ = f"{name}_reference"
    reference.__doc__ = (
        f"``{name}`` of a single-label run: :mod:`evalstore.core.single_label` over "
        ":class:`RankedLists` (one list per class, one +1 per sample)."
    )
    return reference
