"""Detection inputs: the four tables every detection reader returns, and the box checks
they share (:mod:`~evalstore.ingest.formats.coco`, :mod:`~evalstore.ingest.formats.voc_det`,
:mod:`~evalstore.ingest.formats.boxes`).

Boxes are held in COCO's ``[x, y, w, h]`` form as float64; where the input wrote corners
(VOC's ``x1 y1 x2 y2``, a ``xyxy`` box table) they are kept too, as written (``x1`` .. ``y2``;
NULL otherwise), since the VOC protocols add 1 pixel to the original corners. Ids are text:
COCO's integer ids as their decimal text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import polars as pl
import pyarrow as pa

from evalstore.errors import InvalidInput

__all__ = [
    "CATEGORIES",
    "DETECTIONS",
    "GROUND_TRUTH",
    "IMAGES",
    "DetectionInput",
    "check_boxes",
    "check_scores",
    "table",
]

_CORNERS = [(c, pa.float64()) for c in ("x1", "y1", "x2", "y2")]
_BOX = [(c, pa.float64()) for c in ("x", "y", "w", "h")]
_KEY = [("image_id", pa.string()), ("category_id", pa.string())]

#: one row per image: its id, file name, width and height (NULL where the input has none)
IMAGES = pa.schema(
    [("image_id", pa.string()), ("file_name", pa.string()), ("width", pa.int64()),
     ("height", pa.int64())]
)  # fmt: skip
#: one row per category
CATEGORIES = pa.schema([("category_id", pa.string()), ("name", pa.string())])
#: one row per ground-truth box; area: COCO's ``area`` where given, else w*h
GROUND_TRUTH = pa.schema(
    [("gt_id", pa.string()), *_KEY, *_BOX, ("area", pa.float64()), ("iscrowd", pa.bool_()),
     ("ignore", pa.bool_()), ("difficult", pa.bool_()), *_CORNERS]
)  # fmt: skip
#: one row per detection; det_id: its 0-based position in the input; area: w*h (``loadRes``)
DETECTIONS = pa.schema(
    [("det_id", pa.int64()), *_KEY, *_BOX, ("score", pa.float64()), ("area", pa.float64()),
     *_CORNERS]
)  # fmt: skip


@dataclass(frozen=True)
class DetectionInput:
    """What a detection reader returns: four Arrow tables of the schemas :data:`IMAGES`,
    :data:`CATEGORIES`, :data:`GROUND_TRUTH` and :data:`DETECTIONS`."""

    images: pa.Table
    categories: pa.Table
    ground_truth: pa.Table
    detections: pa.Table


def table(frame: pl.DataFrame, schema: pa.Schema) -> pa.Table:
    """``frame`` as an Arrow table of ``schema``: its columns in that order, a column the
    frame lacks all NULL."""
    n = frame.height
    columns = [
        frame[f.name].to_arrow().cast(f.type) if f.name in frame.columns else pa.nulls(n, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)


_SIDES = (("w", "width"), ("h", "height"))


def check_boxes(frame: pl.DataFrame, where: Callable[[int], str], what: str = "bbox") -> None:
    """Refuse a box with a NaN or infinite coordinate or a negative side: ``where(i)`` names
    row ``i`` (``"results.json: record 17"``), the message says which part is wrong."""
    for col, name in (("x", "x"), ("y", "y"), *_SIDES):
        values = frame[col]
        checks: list[tuple[pl.Series, str]] = [
            (values.is_null(), f"has no {name}"),
            (values.is_nan(), f"has a NaN {name}"),
            (values.is_infinite(), f"has an infinite {name}"),
        ]
        if col in ("w", "h"):
            checks.append((values < 0, f"has a negative {name}"))
        for bad, message in checks:
            hit = bad.fill_null(False)
            if hit.any():
                i = int(hit.arg_true()[0])
                raise InvalidInput(f"{where(i)}: {what} {message} ({values[i]!r})")


def check_scores(frame: pl.DataFrame, where: Callable[[int], str]) -> None:
    """Refuse a NULL or NaN score."""
    for bad, message in ((frame["score"].is_null(), "no score"), (frame["score"].is_nan(), "")):
        hit = bad.fill_null(False)
        if hit.any():
            i = int(hit.arg_true()[0])
            raise InvalidInput(f"{where(i)}: " + (message or "score is NaN"))
