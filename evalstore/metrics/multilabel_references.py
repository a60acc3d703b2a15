"""The NumPy references of the multi-label metrics (``cp`` ... ``of1`` and their ``_at_k``
forms): :mod:`evalstore.core.multilabel` over a classification run's :class:`RankedLists`,
a list per class, an item per image.

>>> lists = RankedLists(group=np.array(["cat", "dog", "cat", "dog"], dtype=object),
...     scores=np.array([0.9, 0.2, 0.6, 0.7]), labels=np.array([1, 1, -1, 1]),
...     items=np.array(["i1", "i1", "i2", "i2"], dtype=object))
>>> of1 = multilabel_reference("of1")(lists, Params())  # at 0.5: OP = OR = 2/3
>>> of1.group.tolist(), of1.at.tolist(), of1.value.tolist()
([None], [0.5], [0.6666666666666666])
"""

from __future__ import annotations

import numpy as np

from evalstore.core import multilabel
from evalstore.core.points import docid_order
from evalstore.errors import InvalidInput
from evalstore.metrics.catalogue import MULTILABEL_THRESHOLDS
from evalstore.metrics.references import Inputs, Params, RankedLists, Reference, Result

__all__ = ["multilabel_reference", "multilabel_result", "multilabel_rows"]


def _classes(lists: RankedLists) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The class ids (sorted), each row's class code, and each class's first input position
    (its place in the tie order of the top k but under ``docid``: :func:`multilabel_rows`)."""
    group = np.asarray(lists.group, dtype=object)
    ids = np.array(sorted(set(group.tolist())), dtype=object)
    where = {g: i for i, g in enumerate(ids.tolist())}
    codes = np.array([where[g] for g in group.tolist()], dtype=np.int64)
    seq = np.arange(group.size) if lists.order is None else np.asarray(lists.order)
    first = np.full(ids.size, np.iinfo(np.int64).max)
    np.minimum.at(first, codes, seq)
    return ids, codes, first


def _split(metric: str) -> tuple[str, bool]:
    """(the number's name, whether the top-k form) of ``cp`` ... ``of1_at_k``."""
    return (metric[: -len("_at_k")], True) if metric.endswith("_at_k") else (metric, False)


def multilabel_rows(
    metric: str,
    ids: np.ndarray,
    cls: np.ndarray,
    image: np.ndarray,
    scores: np.ndarray,
    labels: np.ndarray,
    first: np.ndarray,
    params: Params,
) -> multilabel.Rows:
    """The rows of a run that ``metric`` (``cp`` ... ``of1_at_k``) counts under ``params``:
    class ``ids`` (each row's code ``cls``, ``first`` each class's first input position),
    each row's ``image`` code, score (-inf for NULL) and label."""
    _, top_k = _split(metric)
    at = np.asarray(MULTILABEL_THRESHOLDS if params.at is None else params.at, dtype=float)
    order = docid_order(ids) if params.ties == "docid" else first
    k = (params.k if params.k is not None else 3) if top_k else None
    return multilabel.rows_of(cls, image, scores, labels, order, at, k=k, ties=params.ties)


def multilabel_result(
    metric: str,
    rows: multilabel.Rows,
    ids: np.ndarray,
    params: Params,
    weight: np.ndarray | None = None,
) -> Result:
    """The reference's rows of ``metric`` from the run's ``rows`` (:func:`multilabel_rows`),
    each image counted ``weight[image]`` times (``compare``'s draws of images)."""
    name, _ = _split(metric)
    at = np.asarray(MULTILABEL_THRESHOLDS if params.at is None else params.at, dtype=float)
    nc, np_, ng = rows.counts(weight)
    run = multilabel.overall(name, nc, np_, ng)
    groups: list[object] = [None] * at.size
    values, xs = [run], [at]
    classes = multilabel.per_class(name, nc, np_, ng)
    if classes is not None:
        groups += np.repeat(ids, at.size).tolist()
        values.append(classes.reshape(-1))
        xs.append(np.tile(at, ids.size))
    out = np.empty(len(groups), dtype=object)
    out[:] = groups
    return Result(out, np.concatenate(values), np.concatenate(xs))


def multilabel_reference(name: str, *, top_k: bool = False) -> Reference:
    """The reference of ``name`` (``cp`` ... ``of1``), or with ``top_k`` of ``name_at_k``: the
    run's value (group None) and, for ``cp``, ``cr``, ``cf1``, each class's, at each threshold
    (:class:`evalstore.core.multilabel.Rows`)."""
    metric = f"{name}_at_k" if top_k else name

    def reference(inputs: Inputs, params: Params) -> Result:
        if not isinstance(inputs, RankedLists):
            raise InvalidInput(f"{metric} reads RankedLists, got {type(inputs).__name__}")
        if inputs.items is None:
            raise InvalidInput(f"{metric} needs the item ids (RankedLists.items): the images")
        ids, codes, first = _classes(inputs)
        images = np.asarray(inputs.items, dtype=object).astype(str)
        _, image = np.unique(images, return_inverse=True)
        rows = multilabel_rows(
            metric, ids, codes, image.reshape(-1), np.asarray(inputs.scores, dtype=np.float64),
            np.asarray(inputs.labels), first, params,
        )  # fmt: skip
        return multilabel_result(metric, rows, ids, params)

    reference.__name__ = reference.__qualname__ = f"{metric}_reference"
    reference.__doc__ = (
        f"``{metric}`` of a classification run: the run's value and its classes', at each "
        f"threshold (:mod:`evalstore.core.multilabel`).\n\n{multilabel.__doc__}"
    )
    return reference
