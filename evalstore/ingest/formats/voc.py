"""PASCAL VOC classification results and ground truth (the devkit's text files).

Results: ``comp1_cls_<set>_<class>.txt`` (``comp2`` ... for other competitions), one
``<image_id> <confidence>`` per line. Ground truth: ``<class>_<set>.txt`` in
``VOCdevkit/VOC20xx/ImageSets/Main``, one ``<image_id> <1|-1|0>`` per line, 0 = difficult
(ignored). Each class is one ranked list: ``group_id`` = class, ``item_id`` = image id.
As the devkit's ``VOCevalcls.m``, an image in the results but not in the ground truth, or in
the ground truth without a result, is an error.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from evalstore.errors import InvalidInput
from evalstore.ingest.sources import Source

__all__ = ["read_classification"]

_RESULTS = re.compile(r"^comp\d+_cls_(?P<set>[A-Za-z0-9]+)_(?P<cls>.+)\.txt$")


def _pairs(path: Path, second: str) -> pl.DataFrame:
    """Two whitespace-separated fields per line -> (image_id, second) as strings."""
    if not path.is_file():
        raise InvalidInput(f"{path}: no such file")
    lines = pl.read_csv(
        path, has_header=False, new_columns=["line"], separator="\x1f", quote_char=None
    ).with_row_index("row", offset=1)
    lines = lines.filter(pl.col("line").str.strip_chars() != "")
    if lines.height == 0:
        raise InvalidInput(f"{path}: no rows")
    fields = lines.with_columns(
        pl.col("line").str.extract_groups(r"^\s*(\S+)\s+(\S+)\s*$").alias("f")
    ).unnest("f")
    bad = fields.filter(pl.col("1").is_null())
    if bad.height:
        row = bad.row(0, named=True)
        raise InvalidInput(
            f"{path} line {row['row']}: expected '<image_id> <{second}>', got {row['line']!r}"
        )
    return fields.select(pl.col("row"), pl.col("1").alias("image_id"), pl.col("2").alias(second))


def _number(frame: pl.DataFrame, col: str, path: Path, dtype: type[pl.DataType]) -> pl.Series:
    parsed = frame[col].cast(dtype, strict=False)
    bad = parsed.is_null()
    if bad.any():
        i = int(bad.arg_true()[0])
        raise InvalidInput(f"{path} line {frame['row'][i]}: {frame[col][i]!r} is not a valid {col}")
    return parsed


def read_classification(
    results: Sequence[Source], gt_dir: str | os.PathLike[str]
) -> pl.DataFrame:
    """Read VOC classification result files and their ground truth into one frame.

    Args:
        results: ``comp1_cls_test_<class>.txt`` files, one per class.
        gt_dir: the folder with ``<class>_<set>.txt`` ground-truth files.

    Returns:
        Columns group_id (class), item_id (image id), score (confidence), label (+1/-1/0).

    Raises:
        InvalidInput: a misnamed file, a malformed line, or ids in one file and not the other.
    """
    frames = []
    for raw in results:
        if not isinstance(raw, (str, os.PathLike)):
            raise InvalidInput("--format voc reads result files, not in-memory data")
        path = Path(raw)
        m = _RESULTS.match(path.name)
        if not m:
            raise InvalidInput(
                f"{path}: not a VOC classification result file (comp<N>_cls_<set>_<class>.txt)"
            )
        cls, image_set = m.group("cls"), m.group("set")
        gt_path = Path(gt_dir) / f"{cls}_{image_set}.txt"
        res = _pairs(path, "confidence")
        gt = _pairs(gt_path, "label")
        dup = res["image_id"].is_duplicated()
        if dup.any():
            i = int(dup.arg_true()[1])
            raise InvalidInput(
                f"{path} line {res['row'][i]}: image {res['image_id'][i]!r} appears twice"
            )
        score = _number(res, "confidence", path, pl.Float64)
        label = _number(gt, "label", gt_path, pl.Int8)
        if not label.is_in([1, -1, 0]).all():
            i = int((~label.is_in([1, -1, 0])).arg_true()[0])
            raise InvalidInput(
                f"{gt_path} line {gt['row'][i]}: label {gt['label'][i]!r} is not 1, -1 or 0"
            )
        res = res.with_columns(score=score)
        gt = gt.with_columns(label=label)
        extra = res.join(gt, on="image_id", how="anti")
        if extra.height:
            raise InvalidInput(
                f"{path} line {extra['row'][0]}: image {extra['image_id'][0]!r} is not in "
                f"{gt_path} ({extra.height} such image(s))"
            )
        missing = gt.join(res, on="image_id", how="anti")
        if missing.height:
            raise InvalidInput(
                f"{path}: no result for image {missing['image_id'][0]!r} of {gt_path} line "
                f"{missing['row'][0]} ({missing.height} image(s) missing)"
            )
        frames.append(
            res.join(
                gt.select("image_id", "label"), on="image_id", how="left", maintain_order="left"
            ).select(
                pl.lit(cls).alias("group_id"),
                pl.col("image_id").alias("item_id"),
                pl.col("score"),
                pl.col("label"),
            )
        )
    if not frames:
        raise InvalidInput("no VOC result files given")
    return pl.concat(frames)
