"""Box tables: detections and ground truth as Parquet, CSV or NDJSON files, in-memory frames
(polars, pandas, pyarrow), or torchmetrics-style lists of per-image dicts.

Columns: ``image_id``; the category as ``category``, ``category_id`` or ``label``; the box as
``x1 y1 x2 y2`` (``box_format="xyxy"``), ``x y w h`` (``"xywh"``, COCO's) or ``cx cy w h``
(``"cxcywh"``); detections a ``score``; ground truth optionally ``iscrowd``, ``difficult``,
``ignore``, ``area`` and an id (``gt_id`` or ``id``; else its row number). Files are read
with polars, a CSV file's columns as text first, so that ids keep the text they were written
with and a number that does not parse is named by its row.

A list is torchmetrics' ``MeanAveragePrecision.update(preds, target)`` input: one dict per
image, ``{"boxes": (N, 4), "scores": (N,), "labels": (N,)}`` for detections and ``{"boxes",
"labels"}`` with optional ``iscrowd`` and ``area`` for ground truth, arrays or tensors; the
image id is the dict's position in the list, and the two lists must be of one length.

Every box becomes ``[x, y, w, h]`` (``xyxy``: ``x1, y1, x2 - x1, y2 - y1``, the corners kept as
given; ``cxcywh``: ``cx - w / 2, cy - h / 2, w, h``). Rows are named in errors from 0
(``dets.csv: row 17``; ``detections[3] box 2`` for a list).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from evalstore.errors import InvalidInput
from evalstore.ingest.formats.detection import (
    CATEGORIES,
    DETECTIONS,
    GROUND_TRUTH,
    IMAGES,
    DetectionInput,
    check_boxes,
    check_scores,
    table,
)
from evalstore.ingest.sources import READ_ERRORS, check_file, first_line

__all__ = ["BOX_FORMATS", "read_boxes"]

#: box_format -> the four box columns it reads
BOX_FORMATS = {
    "xyxy": ("x1", "y1", "x2", "y2"),
    "xywh": ("x", "y", "w", "h"),
    "cxcywh": ("cx", "cy", "w", "h"),
}
_CATEGORY = ("category", "category_id", "label")
_FLAGS = ("iscrowd", "difficult", "ignore")
_READERS: dict[str, Callable[..., pl.DataFrame]] = {
    ".parquet": pl.read_parquet,
    ".csv": lambda p: pl.read_csv(p, infer_schema=False),
    ".ndjson": pl.read_ndjson,
    ".jsonl": pl.read_ndjson,
}

Where = Callable[[int], str]


def _read_file(path: Path) -> pl.DataFrame:
    check_file(path)
    reader = _READERS.get(path.suffix.lower())
    if reader is None:
        raise InvalidInput(f"{path}: not a box table (.parquet, .csv, .ndjson or .jsonl)")
    try:
        return reader(path)
    except READ_ERRORS as exc:
        raise InvalidInput(f"{path}: cannot read: {first_line(exc)}") from None


def _frame(data: Any, name: str) -> pl.DataFrame:
    if isinstance(data, pl.LazyFrame):
        return data.collect()
    if isinstance(data, pl.DataFrame):
        return data
    try:
        frame = pl.from_pandas(data) if hasattr(data, "to_numpy") else pl.from_arrow(data)
    except (TypeError, ValueError, *READ_ERRORS):
        raise InvalidInput(
            f"{name}: not a box table (a path, a polars, pandas or pyarrow table, or a list "
            "of per-image dicts)"
        ) from None
    if not isinstance(frame, pl.DataFrame):
        raise InvalidInput(f"{name}: not a table")
    return frame


def _array(
    image: Mapping[str, Any], key: str, where: str, shape: tuple[int | str, ...]
) -> np.ndarray:
    value = image.get(key)
    if value is None:
        raise InvalidInput(f"{where}: no {key!r}")
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().numpy()
    array = np.asarray(value)
    if array.size == 0 and len(shape) == 2:
        array = array.reshape(0, 4)
    if array.ndim != len(shape) or (len(shape) == 2 and array.shape[1] != 4):
        raise InvalidInput(f"{where}: {key!r} has shape {array.shape}, not {shape}")
    return array


def _from_list(images: Sequence[Any], name: str, columns: Sequence[str], gt: bool) -> pl.DataFrame:
    """A torchmetrics-style list as one frame, with ``_image`` and ``_box`` (positions)."""
    parts = []
    for i, image in enumerate(images):
        where = f"{name}[{i}]"
        if not isinstance(image, Mapping):
            raise InvalidInput(f"{where}: not a dict of arrays")
        boxes = _array(image, "boxes", where, ("N", 4)).astype(np.float64)
        n = len(boxes)
        cols: dict[str, Any] = {c: boxes[:, k] for k, c in enumerate(columns)}
        extra = ("labels", "iscrowd", "area") if gt else ("labels", "scores")
        for key in extra:
            if key == "labels" or key == "scores" or key in image:
                values = _array(image, key, where, ("N",))
                if len(values) != n:
                    raise InvalidInput(f"{where}: {len(values)} {key} for {n} boxes")
                cols[{"labels": "category", "scores": "score"}.get(key, key)] = values
        frame = pl.DataFrame(cols).with_columns(
            pl.lit(str(i)).alias("image_id"),
            pl.lit(i).alias("_image"),
            pl.int_range(pl.len(), dtype=pl.Int64).alias("_box"),
        )
        parts.append(frame)
    if not parts:
        return pl.DataFrame()
    return pl.concat(parts, how="diagonal_relaxed")


def _number(frame: pl.DataFrame, col: str, where: Where) -> pl.Series:
    series = frame[col]
    if series.dtype == pl.String:
        parsed = series.str.strip_chars().cast(pl.Float64, strict=False)
    else:
        try:
            parsed = series.cast(pl.Float64)
        except READ_ERRORS:
            raise InvalidInput(f"{where(0)}: column {col!r} is not numeric") from None
    bad = parsed.is_null() & series.is_not_null()
    if bad.any():
        i = int(bad.arg_true()[0])
        raise InvalidInput(f"{where(i)}: {col} {series[i]!r} is not a number")
    return parsed


def _flag(frame: pl.DataFrame, col: str, where: Where) -> pl.Series:
    values = _number(frame, col, where)
    bad = ~values.is_in([0.0, 1.0]) & values.is_not_null()
    if bad.any():
        i = int(bad.arg_true()[0])
        raise InvalidInput(f"{where(i)}: {col} {frame[col][i]!r} is not 0 or 1")
    return values.cast(pl.Boolean)


def _column(frame: pl.DataFrame, names: Sequence[str], name: str) -> str:
    for col in names:
        if col in frame.columns:
            return col
    raise InvalidInput(f"{name}: no column {' or '.join(map(repr, names))}")


def _normalised(frame: pl.DataFrame, name: str, fmt: str, gt: bool, where: Where) -> pl.DataFrame:
    """``frame`` in the columns of :data:`DETECTIONS` or :data:`GROUND_TRUTH`, checked."""
    if frame.height == 0 and not frame.columns:
        return pl.DataFrame()
    cat = _column(frame, _CATEGORY, name)
    _column(frame, ("image_id",), name)
    for col in BOX_FORMATS[fmt]:
        _column(frame, (col,), name)
    out = frame.select(
        pl.col("image_id").cast(pl.String), pl.col(cat).cast(pl.String).alias("category_id")
    )
    for key in ("image_id", "category_id"):
        missing = out[key].is_null()
        if missing.any():
            raise InvalidInput(f"{where(int(missing.arg_true()[0]))}: no {key}")
    a, b, c, d = (_number(frame, col, where) for col in BOX_FORMATS[fmt])
    if fmt == "xyxy":
        out = out.with_columns(x1=a, y1=b, x2=c, y2=d, x=a, y=b, w=c - a, h=d - b)
    elif fmt == "xywh":
        out = out.with_columns(x=a, y=b, w=c, h=d)
    else:
        out = out.with_columns(x=a - c / 2, y=b - d / 2, w=c, h=d)
    check_boxes(out, where, "box")
    if not gt:
        out = out.with_columns(score=_number(frame, _column(frame, ("score",), name), where))
        check_scores(out, where)
        return out.with_columns(
            det_id=pl.int_range(pl.len(), dtype=pl.Int64), area=pl.col("w") * pl.col("h")
        )
    for col in _FLAGS:
        if col in frame.columns:
            out = out.with_columns(_flag(frame, col, where).alias(col))
    area = _number(frame, "area", where) if "area" in frame.columns else None
    ids = next((c for c in ("gt_id", "id") if c in frame.columns), None)
    gt_id = (
        frame[ids].cast(pl.String)
        if ids
        else pl.int_range(0, frame.height, eager=True).cast(pl.String)
    )
    bad = gt_id.is_null() | ~gt_id.is_first_distinct()
    if bad.any():  # an annotation id names one box (the matches and diff --items name it)
        i = int(bad.arg_true()[0])
        said = "missing" if gt_id[i] is None else f"{gt_id[i]!r} again"
        raise InvalidInput(f"{where(i)}: {ids} {said} (annotation ids are unique)")
    return out.with_columns(
        gt_id=gt_id,
        # a missing area (absent, or NULL: a list's image without one) is w*h
        area=pl.col("w") * pl.col("h")
        if area is None
        else pl.coalesce(area, pl.col("w") * pl.col("h")),
        iscrowd=pl.col("iscrowd").fill_null(False) if "iscrowd" in out.columns else pl.lit(False),
    )


def _read(data: Any, name: str, fmt: str, gt: bool) -> tuple[pl.DataFrame, int | None]:
    """One input normalised; for a list, its number of images."""
    if isinstance(data, (str, os.PathLike)):
        path = Path(data)
        frame = _read_file(path)
        return _normalised(frame, str(path), fmt, gt, lambda i: f"{path}: row {i}"), None
    if isinstance(data, list | tuple):
        frame = _from_list(data, name, BOX_FORMATS[fmt], gt)

        def where(i: int) -> str:
            return f"{name}[{frame['_image'][i]}] box {frame['_box'][i]}"

        return _normalised(frame, name, fmt, gt, where), len(data)
    frame = _frame(data, name)
    return _normalised(frame, name, fmt, gt, lambda i: f"{name}: row {i}"), None


def _in_order(*series: pl.Series) -> list[str]:
    return list(dict.fromkeys(v for s in series for v in s.to_list()))


def read_boxes(detections: Any, ground_truth: Any, box_format: str) -> DetectionInput:
    """Read detections and ground truth given as box tables (see the module docstring).

    Raises:
        InvalidInput: an unknown ``box_format``, a missing column, a value that is not a
            number, a negative, NaN or infinite box side, a NaN score, a flag not 0 or 1, or
            lists of different lengths.
    """
    if box_format not in BOX_FORMATS:
        raise InvalidInput(f"box_format {box_format!r}: expected one of {', '.join(BOX_FORMATS)}")
    dets, n_dets = _read(detections, "detections", box_format, gt=False)
    truth, n_truth = _read(ground_truth, "ground_truth", box_format, gt=True)
    if n_dets is not None and n_truth is not None and n_dets != n_truth:
        raise InvalidInput(
            f"detections: {n_dets} images, ground_truth: {n_truth} (lists of one dict per image)"
        )
    image_ids = _in_order(*(f["image_id"] for f in (truth, dets) if "image_id" in f.columns))
    if n_dets is not None or n_truth is not None:
        image_ids = _in_order(pl.Series([str(i) for i in range(max(n_dets or 0, n_truth or 0))]))
    categories = _in_order(*(f["category_id"] for f in (truth, dets) if "category_id" in f.columns))
    return DetectionInput(
        images=table(pl.DataFrame({"image_id": image_ids}, schema={"image_id": pl.String}), IMAGES),
        categories=table(
            pl.DataFrame(
                {"category_id": categories, "name": categories},
                schema={"category_id": pl.String, "name": pl.String},
            ),
            CATEGORIES,
        ),
        ground_truth=table(truth, GROUND_TRUTH),
        detections=table(dets, DETECTIONS),
    )
