"""The range of a metric's values: the one table the dashboards, the UI and the CLI clip
intervals to.

Every registered metric is a fraction in 0..1 but TIDE's error weights (``tide_*``, in AP
points, 0..100), ``reprojection_error`` (pixels, no upper bound), ``pose_error`` (degrees,
0..180; a failed pair's +inf is clipped) and ``pose_ransac_threshold`` (pixels). A user's
metric or a logged value has no known range (None). COCO's metrics are stored as NaN where
pycocotools says -1 ("absent"), never as -1, so 0..1 holds for them too.

>>> value_range("map"), value_range("tide_cls"), value_range("reprojection_error")
((0.0, 1.0), (0.0, 100.0), (0.0, None))
>>> value_range("my_logged_loss") is None
True
"""

from __future__ import annotations

import math

from evalstore.errors import InvalidInput
from evalstore.metrics.registry import get

__all__ = ["clip_bounds", "value_range"]

_TIDE = (0.0, 100.0)
_UNBOUNDED: dict[str, tuple[float, float | None]] = {
    "reprojection_error": (0.0, None), "pose_error": (0.0, 180.0),
    "pose_ransac_threshold": (0.0, None),
}  # fmt: skip


def value_range(metric: str | None) -> tuple[float, float | None] | None:
    """The range of ``metric``'s values, by its name or its mean's (``map`` -> ap): (low,
    high), high None when unbounded; None for a metric whose range is unknown (a user's
    metric, a logged or unknown name)."""
    if not metric:
        return None
    try:
        found = get(metric)
    except InvalidInput:
        return None
    if found.path is not None:  # a user's metric: its range is the user's
        return None
    if found.name.startswith("tide_"):
        return _TIDE
    return _UNBOUNDED.get(found.name, (0.0, 1.0))


def clip_bounds(metric: str | None) -> tuple[float, float] | None:
    """:func:`value_range` as a value is clipped to it: an unbounded top is +inf.

    >>> clip_bounds("map"), clip_bounds("reprojection_error"), clip_bounds("my_loss")
    ((0.0, 1.0), (0.0, inf), None)
    """
    span = value_range(metric)
    return None if span is None else (span[0], math.inf if span[1] is None else span[1])
