"""`evalstore ingest` of detection runs: `--format coco --coco-gt`, `--format voc-det
--voc-annotations --voc-imageset` and box tables (`-t detection --boxes-gt --box-format`).
Each form stores the rows its reader gives (checked in the det_* tables); bad input, a
missing or misplaced option end in one `Error:` line, exit code 1 or 2 and the store as it
was; a Ctrl-C leaves the store as it was or with the run whole."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pytest
from conftest import ranked, snapshot

COMMON = ("--git-commit", "abc123", "--created-at", "2026-01-02T03:04:05")

GT = {
    "images": [
        {"id": 1, "file_name": "a.jpg", "width": 640, "height": 480},
        {"id": 2, "file_name": "b.jpg", "width": 320, "height": 240},
        {"id": 30, "file_name": "c.jpg", "width": 100, "height": 100},
    ],
    "categories": [{"id": 1, "name": "person"}, {"id": 7, "name": "dog"}, {"id": 9, "name": "cat"}],
    "annotations": [
        {"id": 5, "image_id": 1, "category_id": 1, "bbox": [10, 20, 30.5, 40], "area": 1000.0,
         "iscrowd": 0},
        {"id": 6, "image_id": 1, "category_id": 7, "bbox": [0, 0, 64, 48], "area": 2.5,
         "iscrowd": 1},
        {"id": 8, "image_id": 2, "category_id": 7, "bbox": [1.25, 2.5, 3.75, 0.5], "iscrowd": 0},
    ],
}  # fmt: skip
RESULTS = [
    {"image_id": 1, "category_id": 1, "bbox": [11, 19, 30, 41], "score": 0.9},
    {"image_id": 1, "category_id": 7, "bbox": [0.5, 0.25, 10, 12.75], "score": 0.1},
    {"image_id": 2, "category_id": 7, "bbox": [1.0, 2.0, 3.5, 0.75], "score": 0.3},
    {"image_id": 30, "category_id": 1, "bbox": [0, 0, 0, 0], "score": 0.3},
]


def _write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data))
    return path


def _rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()  # test-only SQL
    finally:
        con.close()


def _ok(result: Any) -> str:
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return str(result.stdout)


def _refused(cli: Any, db: Path, *args: str, code: int = 1) -> str:
    """Run ``evalstore ingest ARGS``, expect it refused: exit ``code``, one ``Error:`` line,
    no traceback, the store unchanged; return the line."""
    before = snapshot(db)
    result = cli("ingest", *args, *COMMON)
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)
    assert snapshot(db) == before
    if code == 2:  # a usage error: click's panel
        return " ".join(str(result.output).split())
    lines = str(result.stderr).strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]


@pytest.fixture
def coco(tmp_path: Path) -> tuple[Path, Path]:
    return _write(tmp_path / "results.json", RESULTS), _write(tmp_path / "gt.json", GT)


# -- COCO ------------------------------------------------------------------------------------


def test_coco_results_and_annotations(cli: Any, db: Path, coco: tuple[Path, Path]) -> None:
    results, gt = coco
    out = _ok(cli("ingest", str(results), "--format", "coco", "--coco-gt", str(gt), "-r",
                  "det/r50", *COMMON))  # fmt: skip
    assert out.strip() == (
        "ingested run det/r50 (id 1): 4 detections of 3 ground-truth boxes in 3 images, "
        "3 categories"
    )
    boxes = _rows(db, "select det_id, image_id, category_id, x, y, w, h, score, area, x1 "
                      "from det_boxes order by det_id")  # fmt: skip
    assert boxes == [
        (i, str(r["image_id"]), str(r["category_id"]), *map(float, r["bbox"]), r["score"],
         float(r["bbox"][2] * r["bbox"][3]), None)
        for i, r in enumerate(RESULTS)
    ]  # fmt: skip
    truth = _rows(db, "select gt_id, image_id, category_id, x, y, w, h, area, iscrowd "
                      "from det_truth order by seq")  # fmt: skip
    assert truth == [
        (str(a["id"]), str(a["image_id"]), str(a["category_id"]), *map(float, a["bbox"]),
         a.get("area", a["bbox"][2] * a["bbox"][3]), bool(a["iscrowd"]))
        for a in GT["annotations"]
    ]  # fmt: skip
    images = _rows(db, "select image_id, file_name, width, height from det_images order by all")
    assert images == [("1", "a.jpg", 640, 480), ("2", "b.jpg", 320, 240),
                      ("30", "c.jpg", 100, 100)]  # fmt: skip
    cats = _rows(db, "select category_id, name from det_categories order by all")
    assert cats == [("1", "person"), ("7", "dog"), ("9", "cat")]
    run = _rows(db, "select experiment, name, git_commit, created_at from runs")
    assert run == [("det", "r50", "abc123", run[0][3])] and str(run[0][3]).startswith("2026-01-02")


def test_coco_metadata_json_replace_and_append(
    cli: Any, db: Path, coco: tuple[Path, Path], tmp_path: Path
) -> None:
    results, gt = coco
    args = ("ingest", str(results), "--format", "coco", "--coco-gt", str(gt), "-r", "det/r50",
            "-p", "lr=0.01", "-p", "arch=r50", "--tag", "baseline", "--tag", "coco",
            "--notes", "first try", "--output-format", "json", *COMMON)  # fmt: skip
    got = json.loads(_ok(cli(*args)))
    assert got == [{
        "run_id": 1, "experiment": "det", "name": "r50", "task": "detection", "rows": 4,
        "lists": 3, "not_retrieved": 0, "replaced": False, "files": [str(results), str(gt)],
        "method": "stream", "positives": None, "negatives": None, "ignored": None,
        "warnings": [], "ground_truth_boxes": 3, "categories": 3,
    }]  # fmt: skip
    shown = json.loads(_ok(cli("show", "det/r50", "--format", "json")))
    assert shown["params"] == {"lr": 0.01, "arch": "r50"}
    assert sorted(shown["tags"]) == ["baseline", "coco"] and shown["notes"] == "first try"
    assert shown["tasks"] == [{"task": "detection", "rows": 4, "lists": 3}]
    # a second ingest of the name is refused, --replace replaces it whole
    line = _refused(cli, db, str(results), "--format", "coco", "--coco-gt", str(gt), "-r",
                    "det/r50")  # fmt: skip
    assert "det/r50" in line
    _write(results, RESULTS[:2])
    out = _ok(cli("ingest", str(results), "--format", "coco", "--coco-gt", str(gt), "-r",
                  "det/r50", "--replace", *COMMON))  # fmt: skip
    # the id kept
    assert out.startswith("replaced run det/r50 (id 1): 2 detections of 3 ground-truth boxes")
    assert _rows(db, "select run_id, count(*) from det_boxes group by all") == [(1, 2)]
    # --append adds the detection task to a run that lacks it ...
    data = tmp_path / "r.parquet"
    pl.DataFrame(ranked()).write_parquet(data)
    _ok(cli("ingest", str(data), "-t", "retrieval", "-r", "multi/x", *COMMON))
    out = _ok(cli("ingest", str(results), "--format", "coco", "--coco-gt", str(gt), "-r",
                  "multi/x", "--append", *COMMON))  # fmt: skip
    assert out.startswith("ingested run multi/x (id 2): 2 detections")
    tasks = json.loads(_ok(cli("show", "multi/x", "--format", "json")))["tasks"]
    assert sorted(t["task"] for t in tasks) == ["detection", "retrieval"]
    # ... and is refused, in one line, to a run that has detections: they are not merged
    line = _refused(cli, db, str(results), "--format", "coco", "--coco-gt", str(gt), "-r",
                    "multi/x", "--append")  # fmt: skip
    assert line == "Error: run multi/x already has detection rows; use --replace"


def test_other_tasks_json_keeps_its_fields(cli: Any, tmp_path: Path) -> None:
    data = tmp_path / "r.parquet"
    pl.DataFrame(ranked()).write_parquet(data)
    got = json.loads(_ok(cli("ingest", str(data), "-t", "retrieval", "-r", "x",
                             "--output-format", "json", *COMMON)))  # fmt: skip
    assert list(got[0]) == [
        "run_id", "experiment", "name", "task", "rows", "lists", "not_retrieved", "replaced",
        "files", "method", "positives", "negatives", "ignored", "warnings",
    ]  # fmt: skip


def _one(**change: object) -> list[dict[str, Any]]:
    return [RESULTS[0], dict(RESULTS[1], **change)]


def _gt(**change: object) -> dict[str, Any]:
    gt = json.loads(json.dumps(GT))
    for key, value in change.items():
        section, index, field = key.split("__")
        gt[section][int(index)][field] = value
    return gt


@pytest.mark.parametrize(
    ("results", "gt", "message"),
    [
        ('[{"image_id": 1, "bbox": [1,2,3,4]\n  "score": 1}]', GT,
         "{results}: malformed JSON at line 2 column 3"),
        (RESULTS, '{"images": [\n  {"id": 1,}]}', "{gt}: malformed JSON at line 2 column 12"),
        (_one(image_id=4), GT, "{results}: record 1: image_id 4 is not an image of {gt}"),
        ([dict(r, image_id=r["image_id"] + 1000) for r in RESULTS], GT,
         "{results}: none of its image ids is in {gt} (first 1001): a results file for another "
         "annotation file?"),
        (_one(bbox=[0, 0, -2, 1]), GT, "{results}: record 1: bbox has a negative width (-2.0)"),
        (_one(bbox=[0, 0, 1, float("nan")]), GT, "{results}: record 1: bbox has a NaN height"),
        (RESULTS, _gt(annotations__1__id=5),
         "{gt}: annotations[1]: duplicate id 5 (also annotations[0])"),
        (RESULTS, _gt(annotations__2__bbox=[0, 0, -1, 2]),
         "{gt}: annotations[2]: bbox has a negative width (-1.0)"),
    ],
)  # fmt: skip
def test_coco_bad_input_is_one_line_and_stores_nothing(
    cli: Any, db: Path, tmp_path: Path, results: Any, gt: Any, message: str
) -> None:
    paths = {}
    for name, data in (("results", results), ("gt", gt)):
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(data if isinstance(data, str) else json.dumps(data))
    line = _refused(cli, db, str(paths["results"]), "--format", "coco", "--coco-gt",
                    str(paths["gt"]), "-r", "det/bad")  # fmt: skip
    assert line.startswith("Error: " + message.format(**paths)), line


# -- the options of each form ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--format", "coco"], "Error: --format coco needs --coco-gt FILE (the annotation file, "
         "e.g. instances_val2017.json)"),
        (["--coco-gt", "{gt}"], "Error: --coco-gt applies only with --format coco"),
        (["-t", "retrieval", "--coco-gt", "{gt}"],
         "Error: --coco-gt applies only with --format coco"),
        (["--format", "coco", "--coco-gt", "{gt}", "-t", "retrieval"],
         "Error: --format coco reads detections: --task retrieval does not apply (the task is "
         "detection)"),
        (["--format", "coco", "--coco-gt", "{gt}", "--box-format", "xyxy"],
         "Error: --box-format does not apply to --format coco: COCO's boxes are [x, y, w, h]"),
        (["--format", "coco", "--coco-gt", "{gt}", "--voc-imageset", "{gt}"],
         "Error: --voc-imageset applies only with --format voc-det"),
        (["--format", "coco", "--coco-gt", "{gt}", "--negate-score"],
         "Error: --negate-score does not apply to --format coco"),
        (["--format", "coco", "--coco-gt", "{gt}", "-c", "score=s"],
         "Error: --column does not apply to --format coco"),
        (["--format", "coco", "--coco-gt", "{gt}", "{gt}"],
         "Error: --format coco reads one results file (its ground truth by --coco-gt), got 2 "
         "paths"),
        (["--format", "voc-det", "--voc-annotations", "{tmp}"],
         "Error: --format voc-det needs --voc-imageset FILE (the image set, e.g. "
         "ImageSets/Main/test.txt)"),
        (["-t", "detection"], "Error: --task detection needs --boxes-gt FILE (the ground-truth "
         "boxes: Parquet, CSV or NDJSON)"),
        (["-t", "detection", "--boxes-gt", "{gt}", "--box-format", "ltrb"],
         "Error: --box-format ltrb: expected one of xyxy, xywh, cxcywh"),
        (["-t", "detection", "--boxes-gt", "{gt}", "--format", "csv"],
         "Error: --format csv does not apply to --task detection: box tables are read by "
         "their extension (.parquet, .csv, .ndjson, .jsonl); detection formats: coco, voc-det"),
        (["-t", "retrieval", "--box-format", "xyxy"],
         "Error: --box-format applies only with --task detection"),
    ],
)  # fmt: skip
def test_options_that_do_not_fit_are_refused(
    cli: Any, db: Path, tmp_path: Path, coco: tuple[Path, Path], extra: list[str], message: str
) -> None:
    results, gt = coco
    args = [a.format(gt=gt, tmp=tmp_path) for a in extra]
    assert _refused(cli, db, str(results), "-r", "det/x", *args) == message


def test_a_missing_task_names_the_detection_formats(
    cli: Any, db: Path, coco: tuple[Path, Path]
) -> None:
    said = _refused(cli, db, str(coco[0]), "-r", "det/x", code=2)
    assert "required unless --format hpatches is given (or --format coco | voc-det" in said


# -- PASCAL VOC ------------------------------------------------------------------------------


def _voc_xml(image_id: str, objects: list[tuple[str, tuple[int, ...], int | None]]) -> str:
    parts = []
    for name, box, difficult in objects:
        flag = "" if difficult is None else f"<difficult>{difficult}</difficult>"
        corners = "".join(
            f"<{t}>{v}</{t}>" for t, v in zip(("xmin", "ymin", "xmax", "ymax"), box, strict=True)
        )
        parts.append(f"<object><name>{name}</name>{flag}<bndbox>{corners}</bndbox></object>")
    return (
        f"<annotation><filename>{image_id}.jpg</filename><size><width>500</width>"
        f"<height>375</height><depth>3</depth></size>{''.join(parts)}</annotation>"
    )


@pytest.fixture
def voc(tmp_path: Path) -> tuple[list[Path], Path, Path]:
    ann = tmp_path / "Annotations"
    ann.mkdir()
    (ann / "000001.xml").write_text(
        _voc_xml("000001", [("dog", (48, 240, 195, 371), 0), ("person", (8, 12, 352, 498), 1)])
    )
    (ann / "000002.xml").write_text(_voc_xml("000002", [("dog", (1, 1, 10, 20), None)]))
    (ann / "000003.xml").write_text(_voc_xml("000003", []))
    imageset = tmp_path / "test.txt"
    imageset.write_text("000001\n000002\n000003\n")
    dog = tmp_path / "comp4_det_test_dog.txt"
    dog.write_text("000001 0.702 47.5 239.0 196.1 370.9\n000002 0.1 0 0 12 19.75\n")
    person = tmp_path / "comp4_det_test_person.txt"
    person.write_text("000003 0.5 1 2 3 4\n")
    return [dog, person], ann, imageset


def test_voc_devkit_files(cli: Any, db: Path, voc: tuple[list[Path], Path, Path]) -> None:
    results, ann, imageset = voc
    out = _ok(cli("ingest", *map(str, results), "--format", "voc-det", "--voc-annotations",
                  str(ann), "--voc-imageset", str(imageset), "-r", "det/voc", *COMMON))  # fmt: skip
    assert out.strip() == (
        "ingested run det/voc (id 1): 3 detections of 3 ground-truth boxes in 3 images, "
        "2 categories"
    )
    boxes = _rows(db, "select det_id, image_id, category_id, score, x1, y1, x2, y2, x, w "
                      "from det_boxes order by det_id")  # fmt: skip
    assert boxes == [
        (0, "000001", "dog", 0.702, 47.5, 239.0, 196.1, 370.9, 47.5, 196.1 - 47.5),
        (1, "000002", "dog", 0.1, 0.0, 0.0, 12.0, 19.75, 0.0, 12.0),
        (2, "000003", "person", 0.5, 1.0, 2.0, 3.0, 4.0, 1.0, 2.0),
    ]
    truth = _rows(db, "select image_id, category_id, x1, y1, x2, y2, difficult, iscrowd "
                      "from det_truth order by seq")  # fmt: skip
    assert truth == [
        ("000001", "dog", 48.0, 240.0, 195.0, 371.0, False, False),
        ("000001", "person", 8.0, 12.0, 352.0, 498.0, True, False),
        ("000002", "dog", 1.0, 1.0, 10.0, 20.0, False, False),  # no <difficult>: 0
    ]
    assert _rows(db, "select image_id, file_name, width from det_images order by all")[0] == (
        "000001", "000001.jpg", 500,
    )  # fmt: skip


def test_voc_bad_input_is_one_line(cli: Any, db: Path, voc: tuple[list[Path], Path, Path]) -> None:
    results, ann, imageset = voc
    opts = ("--format", "voc-det", "--voc-annotations", str(ann), "--voc-imageset", str(imageset),
            "-r", "det/voc")  # fmt: skip
    results[0].write_text("000001 0.7 10 10 5 20\n")  # x2 < x1
    line = _refused(cli, db, str(results[0]), *opts)
    assert line.startswith(f"Error: {results[0]} line 1: ") and "x2" in line
    results[0].write_text("000009 0.7 1 1 5 20\n")
    line = _refused(cli, db, str(results[0]), *opts)
    assert line == f"Error: {results[0]} line 1: image '000009' is not in {imageset}"
    wrong = results[0].with_name("dets_dog.txt")
    wrong.write_text("000001 0.7 1 1 5 20\n")
    line = _refused(cli, db, str(wrong), *opts)
    assert line == (
        f"Error: {wrong}: not a VOC detection result file (comp<N>_det_<set>_<class>.txt)"
    )


# -- box tables ------------------------------------------------------------------------------

TRUTH = pl.DataFrame({
    "image_id": ["a", "a", "b"], "category": ["cat", "dog", "cat"],
    "x1": [0.0, 10, 5], "y1": [0.0, 10, 5], "x2": [10.0, 30, 25], "y2": [10.0, 40, 15],
    "iscrowd": [0, 0, 1], "difficult": [0, 1, 0],
})  # fmt: skip
DETECTED = pl.DataFrame({
    "image_id": ["a", "b", "b", "c"], "category": ["cat", "cat", "dog", "cat"],
    "x1": [1.0, 5, 0, 2], "y1": [1.0, 5, 0, 2], "x2": [11.0, 20, 4, 3], "y2": [9.0, 15, 4, 6],
    "score": [0.9, 0.5, 0.2, 0.2],
})  # fmt: skip


def _as(frame: pl.DataFrame, fmt: str) -> pl.DataFrame:
    """``frame``'s corners in the columns of ``fmt``."""
    w, h = pl.col("x2") - pl.col("x1"), pl.col("y2") - pl.col("y1")
    if fmt == "xyxy":
        return frame
    if fmt == "xywh":
        return frame.with_columns(x=pl.col("x1"), y=pl.col("y1"), w=w, h=h).drop(
            "x1", "y1", "x2", "y2"
        )
    return frame.with_columns(cx=pl.col("x1") + w / 2, cy=pl.col("y1") + h / 2, w=w, h=h).drop(
        "x1", "y1", "x2", "y2"
    )


def _save(frame: pl.DataFrame, path: Path) -> Path:
    {".parquet": frame.write_parquet, ".csv": frame.write_csv, ".ndjson": frame.write_ndjson}[
        path.suffix
    ](path)
    return path


@pytest.mark.parametrize("ext", [".parquet", ".csv", ".ndjson"])
@pytest.mark.parametrize("fmt", ["xyxy", "xywh", "cxcywh", None])
def test_box_tables(cli: Any, db: Path, tmp_path: Path, ext: str, fmt: str | None) -> None:
    dets = _save(_as(DETECTED, fmt or "xywh"), tmp_path / f"dets{ext}")
    gt = _save(_as(TRUTH, fmt or "xywh"), tmp_path / f"gt{ext}")
    chosen = [] if fmt is None else ["--box-format", fmt]  # default: xywh
    out = _ok(cli("ingest", str(dets), "-t", "detection", "--boxes-gt", str(gt), *chosen,
                  "-r", "det/boxes", *COMMON))  # fmt: skip
    assert out.strip() == (
        "ingested run det/boxes (id 1): 4 detections of 3 ground-truth boxes in 3 images, "
        "2 categories"
    )
    boxes = _rows(db, "select image_id, category_id, x, y, w, h, score, area from det_boxes "
                      "order by det_id")  # fmt: skip
    want = [
        (r["image_id"], r["category"], r["x1"], r["y1"], r["x2"] - r["x1"], r["y2"] - r["y1"],
         r["score"], (r["x2"] - r["x1"]) * (r["y2"] - r["y1"]))
        for r in DETECTED.iter_rows(named=True)
    ]  # fmt: skip
    assert boxes == want  # exact: every coordinate here is a float's exact value
    truth = _rows(db, "select gt_id, image_id, category_id, x, y, w, h, iscrowd, difficult "
                      "from det_truth order by seq")  # fmt: skip
    assert truth == [
        (str(i), r["image_id"], r["category"], r["x1"], r["y1"], r["x2"] - r["x1"],
         r["y2"] - r["y1"], bool(r["iscrowd"]), bool(r["difficult"]))
        for i, r in enumerate(TRUTH.iter_rows(named=True))
    ]  # fmt: skip
    corners = _rows(db, "select count(x1) from det_boxes")[0][0]
    assert corners == (4 if fmt == "xyxy" else 0)  # corners kept where they were written
    assert _rows(db, "select image_id from det_images order by all") == [("a",), ("b",), ("c",)]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("dets", "Error: {dets}: row 1: box has a NaN width (nan)"),
        ("gt", "Error: {gt}: row 2: box has a negative height (-1.0)"),
    ],
)
def test_box_table_bad_sides(cli: Any, db: Path, tmp_path: Path, bad: str, message: str) -> None:
    dets = _as(DETECTED, "xywh").with_columns(
        w=pl.Series([1.0, float("nan"), 2, 3]) if bad == "dets" else pl.col("w")
    )
    truth = _as(TRUTH, "xywh").with_columns(
        h=pl.Series([1.0, 2, -1]) if bad == "gt" else pl.col("h")
    )
    paths = {"dets": _save(dets, tmp_path / "d.csv"), "gt": _save(truth, tmp_path / "g.csv")}
    line = _refused(cli, db, str(paths["dets"]), "-t", "detection", "--boxes-gt",
                    str(paths["gt"]), "-r", "det/bad")  # fmt: skip
    assert line == message.format(**paths)


# -- Ctrl-C ----------------------------------------------------------------------------------


def _big_coco(folder: Path, n_images: int, per_image: int, seed: int) -> tuple[Path, Path]:
    """A COCO pair of files: ``n_images`` images of 3 boxes, ``per_image`` detections each."""
    rng = np.random.default_rng(seed)
    images = [{"id": i, "file_name": f"{i}.jpg", "width": 640, "height": 480}
              for i in range(n_images)]  # fmt: skip
    anns = [
        {"id": i * 3 + k, "image_id": i, "category_id": k % 2 + 1,
         "bbox": [float(v) for v in rng.uniform(0, 100, 4)], "area": 50.0, "iscrowd": 0}
        for i in range(n_images)
        for k in range(3)
    ]  # fmt: skip
    gt = {"images": images, "annotations": anns,
          "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]}  # fmt: skip
    n = n_images * per_image
    boxes = np.round(rng.uniform(0, 100, (n, 4)), 2)
    scores = np.round(rng.random(n), 4)
    lines = ",\n".join(
        f'{{"image_id": {i // per_image}, "category_id": {i % 2 + 1}, "bbox": '
        f'[{b[0]}, {b[1]}, {b[2]}, {b[3]}], "score": {s}}}'
        for i, (b, s) in enumerate(zip(boxes.tolist(), scores.tolist(), strict=True))
    )
    results = folder / "results.json"
    results.write_text("[" + lines + "]")
    return results, _write(folder / "gt.json", gt)


def _state(db: Path) -> tuple[Any, ...] | None:
    if not db.exists():
        return None
    return tuple(
        _rows(db, "select (select count(*) from runs), (select count(*) from det_images), "
                  "(select count(*) from det_categories), (select count(*) from det_truth), "
                  "(select count(*) from det_boxes), (select sum(score) from det_boxes)")[0]
    )  # fmt: skip


@pytest.mark.slow  # real processes, interrupted
@pytest.mark.parametrize("new_store", [False, True])
def test_ctrl_c_leaves_the_store_as_it_was_or_the_run_whole(
    tmp_path: Path, db: Path, new_store: bool
) -> None:
    """A COCO ingest stopped by SIGINT at seeded moments from its start to past its end:
    exit 0 and the run whole, or 130 with one ``Error:`` line that says which of the two the
    store holds (as it was / complete), or 1 with one line and the store as it was; never a
    traceback or a private file left beside the store."""
    results, gt = _big_coco(tmp_path, n_images=1_000, per_image=30, seed=3)
    env = {k: v for k, v in os.environ.items() if k not in ("EVALSTORE_DB", "EVALSTORE_METRICS")}

    def start(store: Path) -> subprocess.Popen[str]:
        args = ["ingest", str(results), "--format", "coco", "--coco-gt", str(gt), "-r",
                "det/x", "--db", str(store), *COMMON]  # fmt: skip
        return subprocess.Popen([sys.executable, "-m", "evalstore", *args], cwd=store.parent,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, start_new_session=True)  # fmt: skip

    def fresh(i: int) -> Path:
        folder = tmp_path / f"t{i}"
        folder.mkdir()
        store = folder / "s.duckdb"
        if not new_store:
            store.write_bytes(db.read_bytes())
        return store

    reference = fresh(0)
    before = _state(reference)
    began = time.monotonic()
    job = start(reference)
    _, stderr = job.communicate(timeout=600)
    seconds = time.monotonic() - began
    assert job.returncode == 0, stderr
    whole = _state(reference)
    assert whole is not None and whole[4] == 30_000 and whole != before
    rng = random.Random(31 + new_store)
    stopped = 0
    for i in range(1, 7):
        store = fresh(i)
        delay = rng.uniform(0, 0.05) if i == 1 else rng.uniform(0, 1.1 * seconds)
        job = start(store)
        time.sleep(delay)
        with contextlib.suppress(ProcessLookupError):  # it had ended
            os.killpg(job.pid, signal.SIGINT)
        _, stderr = job.communicate(timeout=600)
        rc, state, said = job.returncode, _state(store), f"after {delay:.3f}s: {stderr}"
        leftovers = [p.name for p in store.parent.iterdir() if p.name.startswith(".")]
        assert leftovers == [], said
        if "Traceback" in stderr:  # CPython's own start, before evalstore's first line
            assert "evalstore/cli" not in stderr and state == before, said
            continue
        lines = stderr.strip().splitlines()
        if rc == 0:
            assert state == whole, said
            continue
        assert rc in (1, 130, -signal.SIGINT), said
        assert len(lines) <= 1 and all(line.startswith("Error: ") for line in lines), said
        assert state in (before, whole), said
        if rc == 1:
            assert state == before, said
        if rc == 130 and lines:
            assert ("complete in the store" in lines[0]) == (state == whole), said
            stopped += 1
    assert stopped >= 2  # most trials stopped the ingest midway
