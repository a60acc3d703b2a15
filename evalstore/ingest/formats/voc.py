"""PASCAL VOC classification results and ground truth (the devkit's text files).

Results: ``comp1_cls_<set>_<class>.txt`` (``comp2`` ... for other competitions), one
``<image_id> <confidence>`` per line. Ground truth: ``<class>_<set>.txt`` in
``VOCdevkit/VOC20xx/ImageSets/Main``, one ``<image_id> <1|-1|0>`` per line, 0 = difficult
(ignored). Each class is one ranked list: ``group_id`` = class, ``item_id`` = image id.

As the devkit's ``VOCevalcls.m`` (npinto/VOCdevkit ``VOCcode/VOCevalcls.m`` @ b0890ec6)::

    out=ones(size(gt))*-inf;          % every ground-truth image, in ground-truth order
    ... out(j)=confidence(i);         % its confidence from the results
    [so,si]=sort(-out);               % MATLAB's sort is stable

- the items are the ground truth's images **in ground-truth file order**, so that equal
  confidences under ``--ties input`` keep that order, as the devkit's stable sort does;
- an image of the ground truth without a result keeps confidence -Inf: **ranked last and
  counted** (a missed positive still takes a rank, unlike evalstore's ``-inf``, which means
  "not retrieved"). It is stored with the lowest finite double, -1.7976931348623157e308, as is
  a confidence of -Inf in the results, so that these images rank below every other one, in
  ground-truth order among themselves; one warning per class says how many there were;
- an image of the results that is not in the ground truth is an error (``unrecognized
  image``); an image twice in the results is an error too (the devkit would keep the last
  confidence silently).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from evalstore.errors import InvalidInput, option
from evalstore.ingest.exact import INEXACT, inexact_text
from evalstore.ingest.sources import Source, check_file

__all__ = ["MISSING_SCORE", "read_classification", "split_fields", "text_lines"]

#: The score of a ground-truth image without a result (the devkit's -Inf): ranked last, counted.
MISSING_SCORE = float(np.finfo(np.float64).min)

_RESULTS = re.compile(r"^comp\d+_cls_(?P<set>[A-Za-z0-9]+)_(?P<cls>.+)\.txt$")


def text_lines(path: Path) -> pl.DataFrame:
    """The lines of a UTF-8 text file (a BOM, line ends ``\\n`` or ``\\r\\n``), numbered
    from 1 (``row``)."""
    check_file(path, empty_ok=True)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InvalidInput(f"{path} line {line}: not UTF-8 text") from None
    lines = text.removeprefix("\ufeff").split("\n")
    if lines[-1] == "":  # the end of the last line
        lines.pop()
    return pl.DataFrame(
        {"line": [line.removesuffix("\r") for line in lines]}, schema={"line": pl.String}
    ).with_row_index("row", offset=1)


def split_fields(path: Path, names: Sequence[str], expected: str) -> pl.DataFrame:
    """The whitespace-separated fields of every non-blank line, as strings named ``names``,
    with its line number (``row``); a line with another number of fields is refused, the
    message saying what was ``expected``."""
    lines = text_lines(path).filter(pl.col("line").str.strip_chars() != "")
    # split on runs of any whitespace (trec_eval's sscanf, the devkit's textscan)
    parts = lines.with_columns(
        pl.col("line").str.strip_chars().str.replace_all(r"\s+", " ").str.split(" ").alias("f")
    )
    bad = parts.filter(pl.col("f").list.len() != len(names))
    if bad.height:
        row = bad.row(0, named=True)
        raise InvalidInput(f"{path} line {row['row']}: expected {expected}, got {row['line']!r}")
    return parts.select(
        pl.col("row"), *(pl.col("f").list.get(i).alias(n) for i, n in enumerate(names))
    )


def _pairs(path: Path, second: str, empty_ok: bool = False) -> pl.DataFrame:
    """Two whitespace-separated fields per line -> (image_id, second) as strings; a file
    without lines is refused unless ``empty_ok`` (a results file: the devkit then ranks
    every image at -Inf)."""
    lines = text_lines(path).filter(pl.col("line").str.strip_chars() != "")
    if lines.height == 0:
        if not empty_ok:
            raise InvalidInput(f"{path}: no rows")
        return pl.DataFrame(schema={"row": pl.UInt32, "image_id": pl.String, second: pl.String})
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
) -> tuple[pl.DataFrame, list[str]]:
    """Read VOC classification result files and their ground truth into one frame, in
    ground-truth order, images without a result ranked last (see the module docstring).

    Args:
        results: ``comp1_cls_test_<class>.txt`` files, one per class.
        gt_dir: the folder with ``<class>_<set>.txt`` ground-truth files.

    Returns:
        The frame (columns group_id (class), item_id (image id), score (confidence), label
        (+1/-1/0)) and one warning per class with images missing from its results.

    Raises:
        InvalidInput: a misnamed file, a malformed line, or ids in one file and not the other.
    """
    frames = []
    warnings: list[str] = []
    for raw in results:
        if not isinstance(raw, (str, os.PathLike)):
            raise InvalidInput(f"{option('fmt', 'voc')} reads result files, not in-memory data")
        path = Path(raw)
        m = _RESULTS.match(path.name)
        if not m:
            raise InvalidInput(
                f"{path}: not a VOC classification result file (comp<N>_cls_<set>_<class>.txt)"
            )
        cls, image_set = m.group("cls"), m.group("set")
        gt_path = Path(gt_dir) / f"{cls}_{image_set}.txt"
        res = _pairs(path, "confidence", empty_ok=True)
        gt = _pairs(gt_path, "label")
        dup = res["image_id"].is_duplicated()
        if dup.any():
            i = int(dup.arg_true()[1])
            raise InvalidInput(
                f"{path} line {res['row'][i]}: image {res['image_id'][i]!r} appears twice"
            )
        score = _number(res, "confidence", path, pl.Float64)
        bad = score.is_nan() | (score == float("inf"))
        if bad.any():
            i = int(bad.arg_true()[0])
            raise InvalidInput(
                f"{path} line {res['row'][i]}: confidence {res['confidence'][i]!r} is not a "
                "number that ranks (NaN and +Inf are refused)"
            )
        inexact = inexact_text(res["confidence"], score)
        if inexact.any():
            i = int(inexact.arg_true()[0])
            raise InvalidInput(
                f"{path} line {res['row'][i]}: confidence {res['confidence'][i]!r} " + INEXACT
            )
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
            warnings.append(
                f"{path}: {missing.height:,} image(s) of {gt_path} have no result (first "
                f"{missing['image_id'][0]!r}); ranked last and counted, as the devkit's "
                "confidence -Inf"
            )
        frames.append(
            gt.select("image_id", "label")
            .join(res.select("image_id", "score"), on="image_id", how="left", maintain_order="left")
            .select(
                pl.lit(cls).alias("group_id"),
                pl.col("image_id").alias("item_id"),
                pl.when(pl.col("score").is_null() | (pl.col("score") == float("-inf")))
                .then(pl.lit(MISSING_SCORE))
                .otherwise(pl.col("score"))
                .alias("score"),
                pl.col("label"),
            )
        )
    if not frames:
        raise InvalidInput("no VOC result files given")
    return pl.concat(frames), warnings
