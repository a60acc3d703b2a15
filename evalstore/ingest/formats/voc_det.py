"""PASCAL VOC detection results and ground truth (the devkit's files).

Results: one file per class, ``comp4_det_<set>_<class>.txt`` (``comp3`` ... for other
competitions), one ``<image_id> <score> <x1> <y1> <x2> <y2>`` per line, the class taken from
the file name. Ground truth: ``Annotations/<image_id>.xml`` (``filename``, ``size``, and per
``object`` its ``name``, ``difficult`` and ``bndbox`` ``xmin ymin xmax ymax``), for the image
ids listed one per line in the image set file (``ImageSets/Main/<set>.txt``).

As py-faster-rcnn's ``voc_eval`` reads them (rbgirshick/py-faster-rcnn
``lib/datasets/voc_eval.py`` @ 781a917b378dbfdedb45b6a56189a31982da1b43)::

    imagenames = [x.strip() for x in lines]
    splitlines = [x.strip().split(' ') for x in lines]
    confidence = np.array([float(x[1]) for x in splitlines])
    BB = np.array([[float(z) for z in x[2:]] for x in splitlines])
    obj_struct['difficult'] = int(obj.find('difficult').text)

(fields are split on runs of white space here; a missing ``difficult`` is 0). The corners are
kept as written (``x1`` .. ``y2``), since the VOC protocols add 1 pixel to them; the
``[x, y, w, h]`` columns are ``x1, y1, x2 - x1, y2 - y1``. ``det_id`` counts the lines of all
result files, in the order given, from 0.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from evalstore.errors import InvalidInput
from evalstore.ingest.formats.detection import (
    CATEGORIES,
    DETECTIONS,
    GROUND_TRUTH,
    IMAGES,
    DetectionInput,
    check_scores,
    table,
)
from evalstore.ingest.formats.voc import split_fields, text_lines
from evalstore.ingest.sources import check_file

__all__ = ["read_voc_det"]

_RESULTS = re.compile(r"^comp\d+_det_(?P<set>[A-Za-z0-9]+)_(?P<cls>.+)\.txt$")
_FIELDS = ("image_id", "score", "x1", "y1", "x2", "y2")


def _image_set(path: Path) -> list[str]:
    lines = text_lines(path)
    ids: dict[str, int] = {}
    for row, line in zip(lines["row"].to_list(), lines["line"].to_list(), strict=True):
        image_id = line.strip()
        if image_id in ids:
            raise InvalidInput(f"{path} line {row}: image {image_id!r} appears twice")
        if image_id:
            ids[image_id] = row
    if not ids:
        raise InvalidInput(f"{path}: no image ids")
    return list(ids)


def _text(node: ET.Element, tag: str, where: str) -> str:
    found = node.find(tag)
    if found is None or found.text is None or not found.text.strip():
        raise InvalidInput(f"{where}: no <{tag}>")
    return found.text.strip()


def _float(node: ET.Element, tag: str, where: str) -> float:
    text = _text(node, tag, where)
    try:
        value = float(text)
    except ValueError:
        raise InvalidInput(f"{where}: <{tag}> {text!r} is not a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise InvalidInput(f"{where}: <{tag}> {text!r} is not a finite number")
    return value


def _annotation(path: Path, image_id: str, gt: dict[str, list[Any]]) -> dict[str, Any]:
    """One annotation XML: its image's row; its objects appended to ``gt``."""
    check_file(path)
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        line, column = exc.position
        raise InvalidInput(f"{path}: malformed XML at line {line} column {column + 1}") from None
    size = root.find("size")
    width = height = None
    if size is not None:
        width, height = (int(_float(size, t, f"{path}: <size>")) for t in ("width", "height"))
    for k, obj in enumerate(root.findall("object")):
        where = f"{path}: object {k}"
        box = obj.find("bndbox")
        if box is None:
            raise InvalidInput(f"{where}: no <bndbox>")
        x1, y1, x2, y2 = (_float(box, t, where) for t in ("xmin", "ymin", "xmax", "ymax"))
        for lo, hi, a, b in ((x1, x2, "xmin", "xmax"), (y1, y2, "ymin", "ymax")):
            if hi < lo:
                raise InvalidInput(f"{where}: {b} {hi:g} < {a} {lo:g}")
        difficult = obj.find("difficult")
        flag = difficult.text.strip() if difficult is not None and difficult.text else "0"
        if flag not in ("0", "1"):
            raise InvalidInput(f"{where}: <difficult> {flag!r} is not 0 or 1")
        row = {
            "gt_id": f"{image_id}/{k}",
            "image_id": image_id,
            "category_id": _text(obj, "name", where),
            "x1": x1,
            "y1": y1,
            "x2": x2,
            "y2": y2,
            "difficult": flag == "1",
        }
        for key, value in row.items():
            gt[key].append(value)
    name = root.find("filename")
    return {
        "image_id": image_id,
        "file_name": name.text.strip() if name is not None and name.text else None,
        "width": width,
        "height": height,
    }


def _boxes(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(
        x=pl.col("x1"),
        y=pl.col("y1"),
        w=pl.col("x2") - pl.col("x1"),
        h=pl.col("y2") - pl.col("y1"),
    )


def _result_file(path: Path, known: set[str], set_path: Path) -> pl.DataFrame:
    """One class's result lines, checked: (row, image_id, score, x1, y1, x2, y2)."""
    fields = split_fields(path, _FIELDS, "'image_id score x1 y1 x2 y2'")
    for name in _FIELDS[1:]:
        value = fields[name].cast(pl.Float64, strict=False)
        bad_value = value.is_null()
        if name != "score":
            bad_value = bad_value | ~value.is_finite().fill_null(False)
        if bad_value.any():
            i = int(bad_value.arg_true()[0])
            raise InvalidInput(
                f"{path} line {fields['row'][i]}: {name} {fields[name][i]!r} is not a "
                + ("number" if name == "score" else "finite number")
            )
        fields = fields.with_columns(value.alias(name))
    check_scores(fields, lambda i: f"{path} line {fields['row'][i]}")
    for lo, hi in (("x1", "x2"), ("y1", "y2")):
        wrong = fields[hi] < fields[lo]
        if wrong.any():
            i = int(wrong.arg_true()[0])
            raise InvalidInput(
                f"{path} line {fields['row'][i]}: {hi} {fields[hi][i]:g} < {lo} {fields[lo][i]:g}"
            )
    unknown = ~fields["image_id"].is_in(list(known))
    if unknown.any():
        i = int(unknown.arg_true()[0])
        raise InvalidInput(
            f"{path} line {fields['row'][i]}: image {fields['image_id'][i]!r} is not in {set_path}"
        )
    return fields


def read_voc_det(
    results_paths: Sequence[str | os.PathLike[str]],
    annotations_dir: str | os.PathLike[str],
    imageset_path: str | os.PathLike[str],
) -> DetectionInput:
    """Read VOC detection result files, the annotation XMLs of the image set, and the image
    set (see the module docstring).

    Raises:
        InvalidInput: a misnamed result file, a malformed line (file and line number), x2 < x1
            or y2 < y1, a NaN score, a result for an image not in the set, a missing or
            malformed annotation XML.
    """
    set_path, ann_dir = Path(imageset_path), Path(annotations_dir)
    ids = _image_set(set_path)
    gt: dict[str, list[Any]] = {
        k: [] for k in ("gt_id", "image_id", "category_id", "x1", "y1", "x2", "y2", "difficult")
    }
    images = [_annotation(ann_dir / f"{image_id}.xml", image_id, gt) for image_id in ids]
    known = set(ids)
    frames = []
    offset = 0
    for raw in results_paths:
        path = Path(raw)
        m = _RESULTS.match(path.name)
        if not m:
            raise InvalidInput(
                f"{path}: not a VOC detection result file (comp<N>_det_<set>_<class>.txt)"
            )
        fields = _result_file(path, known, set_path)
        frames.append(
            fields.select(
                (pl.int_range(pl.len(), dtype=pl.Int64) + offset).alias("det_id"),
                "image_id",
                pl.lit(m.group("cls")).alias("category_id"),
                "score",
                "x1",
                "y1",
                "x2",
                "y2",
            )
        )
        offset += fields.height
    if not frames:
        raise InvalidInput("no VOC detection result files given")
    detections = _boxes(pl.concat(frames)).with_columns(area=pl.col("w") * pl.col("h"))
    truth = _boxes(
        pl.DataFrame(
            gt,
            schema={
                "gt_id": pl.String,
                "image_id": pl.String,
                "category_id": pl.String,
                "x1": pl.Float64,
                "y1": pl.Float64,
                "x2": pl.Float64,
                "y2": pl.Float64,
                "difficult": pl.Boolean,
            },
        )
    ).with_columns(area=pl.col("w") * pl.col("h"), iscrowd=pl.lit(False))
    names = sorted(set(detections["category_id"].to_list()) | set(gt["category_id"]))
    return DetectionInput(
        images=table(
            pl.DataFrame(
                images,
                schema={
                    "image_id": pl.String,
                    "file_name": pl.String,
                    "width": pl.Int64,
                    "height": pl.Int64,
                },
            ),
            IMAGES,
        ),
        categories=table(pl.DataFrame({"category_id": names, "name": names}), CATEGORIES),
        ground_truth=table(truth, GROUND_TRUTH),
        detections=table(detections, DETECTIONS),
    )
