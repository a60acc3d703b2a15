"""The NumPy references of the metrics of counted outcomes (source ``outcomes``): EventPoint's
IOU = TP / (TP + FP + FN), per group and pooled."""

from __future__ import annotations

import numpy as np

from evalstore.core import matching
from evalstore.errors import InvalidInput
from evalstore.metrics.references import Inputs, Outcomes, Params, Result

__all__ = ["iou_micro_reference", "iou_reference"]


def _outcomes(inputs: Inputs, name: str) -> Outcomes:
    if not isinstance(inputs, Outcomes):
        raise InvalidInput(f"{name} reads Outcomes, got {type(inputs).__name__}")
    return inputs


def iou_reference(inputs: Inputs, params: Params) -> Result:
    """``TP / (TP + FP + FN)`` of every group: :func:`evalstore.core.matching.iou`.

    >>> counts = Outcomes(*map(np.array, (["a", "b"], [3, 0], [1, 0], [2, 0])))
    >>> iou_reference(counts, Params()).value.tolist()  # 3 / (3 + 1 + 2); nothing counted
    [0.5, nan]
    """
    out = _outcomes(inputs, "iou")
    return Result(np.asarray(out.group), matching.iou(out.tp, out.fp, out.fn))


def iou_micro_reference(inputs: Inputs, params: Params) -> Result:
    """Pooled ``sum TP / sum (TP + FP + FN)``, one row for the run (group None):
    :func:`evalstore.core.matching.iou_micro`.

    >>> counts = Outcomes(*map(np.array, (["a", "b"], [3, 1], [1, 2], [2, 1])))
    >>> iou_micro_reference(counts, Params()).value.tolist()  # (3 + 1) / (6 + 4)
    [0.4]
    """
    out = _outcomes(inputs, "iou_micro")
    group = np.array([None], dtype=object)
    return Result(group, np.array([matching.iou_micro(out.tp, out.fp, out.fn)]))
