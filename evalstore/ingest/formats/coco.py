"""COCO detection results and their annotation file, read as pycocotools reads them.

The annotation file (``instances_val2017.json``): ``images`` (``id``, ``file_name``,
``width``, ``height``), ``categories`` (``id``, ``name``) and ``annotations`` (``id``,
``image_id``, ``category_id``, ``bbox`` [x, y, w, h], ``area``, ``iscrowd``, ``ignore`` where
present), read whole with the standard library, as ``COCO.__init__`` does.

The results file: a JSON array of ``{"image_id", "category_id", "bbox", "score"}``, read as
``COCO.loadRes`` reads it (cocodataset/cocoapi ``PythonAPI/pycocotools/coco.py`` @
8c9bcc3cf640524c4c20a9c40e89cb6a2f2fa0e9)::

    bb = ann['bbox']
    ann['area'] = bb[2]*bb[3]
    ann['id'] = id+1

so a detection's area is w*h and its id its position (``det_id`` here is 0-based: record 0 is
the file's first). The array is streamed by DuckDB's JSON reader (``sql/ingest/
coco_results.sql``) in batches of :data:`BATCH` records, checked batch by batch: a million
detections are never a million Python objects.

Ids are text: an integer id as its decimal text, a string id as the string. Errors name the
file and the record (``results.json: record 17: bbox has a negative width (-2.0)``; records
counted from 0, annotations as ``annotations[17]``). A results file none of whose image ids is
in the annotation file is said to be one for another annotation file.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa

from evalstore.db import queries
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
from evalstore.ingest.sources import check_file

__all__ = ["BATCH", "read_coco"]

#: records checked at a time
BATCH = 1 << 16
_INTEGER = ("UBIGINT", "BIGINT", "HUGEINT", "UHUGEINT")
_NUMBER = (*_INTEGER, "DOUBLE")


def _id(value: Any) -> str | None:
    """An id's text: an integer's decimal text, a string as it is; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    return value if isinstance(value, str) else None


def _shown(text: str, kind: str) -> str:
    return text if kind == "int" else json.dumps(text)


def _load_json(path: Path) -> Any:
    check_file(path)
    try:
        with path.open("rb") as f:
            return json.load(f)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"{path}: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path}: cannot read: {exc}") from None


def _records(doc: dict[str, Any], key: str, path: Path) -> list[Any]:
    value = doc.get(key, [] if key == "annotations" else None)
    if not isinstance(value, list):
        raise InvalidInput(f"{path}: no {key!r} list (a COCO annotation file)")
    for i, rec in enumerate(value):
        if not isinstance(rec, dict):
            raise InvalidInput(f"{path}: {key}[{i}]: not an object")
    return value


def _ids(records: list[dict[str, Any]], key: str, path: Path) -> list[str]:
    """Each record's ``id`` as text, refusing a missing, mistyped or repeated one."""
    seen: dict[tuple[str, str], int] = {}
    out = []
    for i, rec in enumerate(records):
        text = _id(rec.get("id"))
        if text is None:
            raise InvalidInput(
                f"{path}: {key}[{i}]: id {rec.get('id')!r} is not an integer or a string"
            )
        kind = "int" if isinstance(rec["id"], int) else "str"
        if (kind, text) in seen:
            raise InvalidInput(
                f"{path}: {key}[{i}]: duplicate id {_shown(text, kind)} "
                f"(also {key}[{seen[kind, text]}])"
            )
        seen[kind, text] = i
        out.append(text)
    return out


def _size(rec: dict[str, Any], field: str, where: str) -> int | None:
    value = rec.get(field)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(f"{where}: {field} {value!r} is not an integer >= 0")
    return value


def _flag(rec: dict[str, Any], field: str, where: str) -> bool | None:
    value = rec.get(field)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    raise InvalidInput(f"{where}: {field} {value!r} is not 0 or 1")


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _annotations(path: Path) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """The annotation file's images, categories and annotations, checked."""
    doc = _load_json(path)
    if not isinstance(doc, dict):
        raise InvalidInput(f"{path}: not a JSON object (a COCO annotation file)")
    images = _records(doc, "images", path)
    categories = _records(doc, "categories", path)
    anns = _records(doc, "annotations", path)
    image_ids, category_ids = _ids(images, "images", path), _ids(categories, "categories", path)
    known_images = {(type(r["id"]) is str, t) for r, t in zip(images, image_ids, strict=True)}
    known_cats = {(type(r["id"]) is str, t) for r, t in zip(categories, category_ids, strict=True)}
    gt_ids = _ids(anns, "annotations", path)
    cols: dict[str, list[Any]] = {k: [] for k in ("image_id", "category_id", "x", "y", "w", "h")}
    cols.update(area=[], iscrowd=[], ignore=[])
    for i, rec in enumerate(anns):
        where = f"{path}: annotations[{i}]"
        for key, known, section in (
            ("image_id", known_images, "images"),
            ("category_id", known_cats, "categories"),
        ):
            text = _id(rec.get(key))
            if text is None or (isinstance(rec[key], str), text) not in known:
                raise InvalidInput(
                    f"{where}: {key} {rec.get(key)!r} is not in the file's {section}"
                )
            cols[key].append(text)
        bbox = rec.get("bbox")
        sides = [_number(v) for v in bbox] if isinstance(bbox, list) and len(bbox) == 4 else [None]
        if None in sides:
            raise InvalidInput(f"{where}: bbox {bbox!r} is not a list of 4 numbers")
        for key, value in zip("xywh", sides, strict=True):
            cols[key].append(value)
        area = rec.get("area")
        if area is not None and _number(area) is None:
            raise InvalidInput(f"{where}: area {area!r} is not a number")
        cols["area"].append(sides[2] * sides[3] if area is None else float(area))  # type: ignore[operator]
        cols["iscrowd"].append(bool(_flag(rec, "iscrowd", where)))
        cols["ignore"].append(_flag(rec, "ignore", where))
    gt = pl.DataFrame(
        {"gt_id": gt_ids, **cols},
        schema_overrides={k: pl.Float64 for k in ("x", "y", "w", "h", "area")}
        | {
            "ignore": pl.Boolean,
            "iscrowd": pl.Boolean,
            "image_id": pl.String,
            "category_id": pl.String,
        },
    )
    check_boxes(gt, lambda i: f"{path}: annotations[{i}]")
    image_frame = pl.DataFrame(
        {
            "image_id": image_ids,
            "file_name": [r.get("file_name") for r in images],
            "width": [_size(r, "width", f"{path}: images[{i}]") for i, r in enumerate(images)],
            "height": [_size(r, "height", f"{path}: images[{i}]") for i, r in enumerate(images)],
            "image_id_str": [isinstance(r["id"], str) for r in images],
        },
        schema={"image_id": pl.String, "file_name": pl.String, "width": pl.Int64,
                "height": pl.Int64, "image_id_str": pl.Boolean},
    )  # fmt: skip
    cat_frame = pl.DataFrame(
        {
            "category_id": category_ids,
            "name": [str(r.get("name", "")) for r in categories],
            "category_id_str": [isinstance(r["id"], str) for r in categories],
        },
        schema={"category_id": pl.String, "name": pl.String, "category_id_str": pl.Boolean},
    )
    return image_frame, cat_frame, gt.with_columns(pl.lit(None, pl.Boolean).alias("difficult"))


_BYTE = re.compile(r"at byte (\d+)[^:]*: (.*?)\.?\s*$", re.S)


def _position(path: Path, offset: int) -> str:
    """``line L column C`` of a byte offset, counted in the file."""
    line, start, done = 1, 0, 0
    with path.open("rb") as f:
        while done < offset:
            chunk = f.read(min(1 << 20, offset - done))
            if not chunk:
                break
            n = chunk.count(b"\n")
            if n:
                line += n
                start = done + chunk.rindex(b"\n") + 1
            done += len(chunk)
    return f"line {line} column {offset - start + 1}"


def _json_error(path: Path, exc: duckdb.Error) -> InvalidInput:
    text = str(exc)
    m = _BYTE.search(text)
    if "Malformed JSON" in text and m:
        offset = int(m.group(1))
        return InvalidInput(
            f"{path}: malformed JSON at {_position(path, offset)} (byte {offset}): {m.group(2)}"
        )
    if "top-level JSON array" in text:
        return InvalidInput(f"{path}: not a JSON array (COCO results are a list of objects)")
    if "Expected OBJECT" in text:
        return InvalidInput(f"{path}: an element of the array is not an object")
    first = text.splitlines()[0] if text else type(exc).__name__
    return InvalidInput(f"{path}: cannot read as JSON: {first}")


def _batches(path: Path) -> Iterator[pl.DataFrame]:
    check_file(path)
    con = duckdb.connect(config={"threads": 1})
    try:
        queries.run(con, "ingest/quiet")
        query = queries.load("ingest/coco_results")
        text = queries.checked(query.name, query.text, {"path": str(path)})
        try:
            result = con.sql(text, params=queries.bind(text, {"path": str(path)}))
            for batch in result.to_arrow_reader(BATCH):
                yield pl.from_arrow(pa.Table.from_batches([batch]))  # type: ignore[misc]
        except duckdb.Error as exc:
            raise _json_error(path, exc) from None
    finally:
        con.close()


def _first(bad: pl.Series) -> int | None:
    bad = bad.fill_null(True)
    return int(bad.arg_true()[0]) if bad.any() else None


def _check_types(batch: pl.DataFrame, where: Any) -> pl.DataFrame:
    """Refuse a record with a missing or mistyped field; add each id's kind."""
    for key in ("image_id", "category_id"):
        kind = batch[f"{key}_type"]
        i = _first(kind.is_null())
        if i is not None:
            raise InvalidInput(f"{where(i)}: no {key}")
        i = _first(~kind.is_in([*_INTEGER, "VARCHAR"]))
        if i is not None:
            raise InvalidInput(f"{where(i)}: {key} {batch[key][i]} is not an integer or a string")
    i = _first(
        (batch["bbox_type"] != "ARRAY")
        | (batch["bbox_len"] != 4)
        | batch.select(pl.any_horizontal(pl.col("x", "y", "w", "h").is_null())).to_series()
    )
    if i is not None:
        raise InvalidInput(f"{where(i)}: bbox is not a list of 4 numbers")
    i = _first(~batch["score_type"].is_in(_NUMBER))
    if i is not None:
        raise InvalidInput(f"{where(i)}: score is not a number")
    return batch.with_columns(
        (pl.col(f"{k}_type") == "VARCHAR").alias(f"{k}_str") for k in ("image_id", "category_id")
    )


def _owned(part: pa.Table) -> pa.Table:
    """A copy of ``part`` in buffers of its own (``concat_arrays`` allocates new ones): a
    column that is a view of DuckDB's batch keeps the whole batch alive (measured: 0.1 GB
    more for a million detections)."""
    columns = [
        pa.concat_arrays(col.chunks) if col.num_chunks else pa.nulls(0, col.type)
        for col in part.columns
    ]
    return pa.Table.from_arrays(columns, schema=part.schema)


def _results(path: Path, gt_path: Path, images: pl.DataFrame, cats: pl.DataFrame) -> pa.Table:
    """The results file's detections, checked batch by batch against the annotation file."""
    image_keys = images.select("image_id", "image_id_str").with_columns(known_image=True)
    cat_keys = cats.select("category_id", "category_id_str").with_columns(known_cat=True)
    parts: list[pa.Table] = []
    offset = 0
    unknown: dict[str, tuple[int, str]] = {}
    any_known = False
    for raw in _batches(path):
        base = offset

        def where(i: int, base: int = base) -> str:
            return f"{path}: record {base + i}"

        batch = _check_types(raw, where)
        check_boxes(batch, where)
        check_scores(batch, where)
        batch = batch.join(
            image_keys, on=["image_id", "image_id_str"], how="left", maintain_order="left"
        ).join(cat_keys, on=["category_id", "category_id_str"], how="left", maintain_order="left")
        for key, col in (("image_id", "known_image"), ("category_id", "known_cat")):
            i = _first(batch[col].is_null())
            if i is not None and key not in unknown:
                kind = "str" if batch[f"{key}_str"][i] else "int"
                unknown[key] = (base + i, _shown(batch[key][i], kind))
        any_known = any_known or bool(batch["known_image"].is_not_null().any())
        parts.append(
            _owned(
                table(
                    batch.select(
                        (pl.int_range(pl.len(), dtype=pl.Int64) + base).alias("det_id"),
                        "image_id",
                        "category_id",
                        "x",
                        "y",
                        "w",
                        "h",
                        "score",
                        (pl.col("w") * pl.col("h")).alias("area"),
                    ),
                    DETECTIONS,
                )
            )
        )
        offset += raw.height
    if "image_id" in unknown:
        if not any_known:
            raise InvalidInput(
                f"{path}: none of its image ids is in {gt_path} (first {unknown['image_id'][1]}): "
                "a results file for another annotation file?"
            )
        i, shown = unknown["image_id"]
        raise InvalidInput(f"{path}: record {i}: image_id {shown} is not an image of {gt_path}")
    if "category_id" in unknown:
        i, shown = unknown["category_id"]
        raise InvalidInput(
            f"{path}: record {i}: category_id {shown} is not a category of {gt_path}"
        )
    return pa.concat_tables(parts) if parts else table(pl.DataFrame(), DETECTIONS)


def read_coco(
    results_path: str | os.PathLike[str], gt_path: str | os.PathLike[str]
) -> DetectionInput:
    """Read a COCO results file and its annotation file (see the module docstring).

    Raises:
        InvalidInput: malformed JSON (with its line and column), a record with a missing or
            mistyped field, a negative, NaN or infinite box side, a NaN score, an image or
            category id that the annotation file lacks, a repeated image, category or
            annotation id, or a results file none of whose images is in the annotation file.
    """
    results, gt_file = Path(results_path), Path(gt_path)
    images, cats, gt = _annotations(gt_file)
    detections = _results(results, gt_file, images, cats)
    return DetectionInput(
        images=table(images, IMAGES),
        categories=table(cats, CATEGORIES),
        ground_truth=table(gt, GROUND_TRUTH),
        detections=detections,
    )
