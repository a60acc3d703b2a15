"""Detection inputs: COCO results and annotation files, VOC devkit detection files, box
tables. Each reader against the reference's own reading code (pycocotools' ``COCO`` and
``loadRes``, run here; py-faster-rcnn's ``voc_eval`` lines, transcribed), each error's exact
one-line message, and round trips between formats."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd  # imported here, not in the first test that converts to pandas
import polars as pl
import pytest
from faster_coco_eval import COCO as FasterCOCO
from pycocotools.coco import COCO

from evalstore.errors import InvalidInput
from evalstore.ingest.formats import coco
from evalstore.ingest.formats.boxes import read_boxes
from evalstore.ingest.formats.coco import read_coco
from evalstore.ingest.formats.voc_det import read_voc_det

GT = {
    "images": [
        {"id": 1, "file_name": "a.jpg", "width": 640, "height": 480},
        {"id": 2, "file_name": "b.jpg", "width": 320, "height": 240},
        {"id": 30, "file_name": "c.jpg", "width": 100, "height": 100},
    ],
    "categories": [{"id": 1, "name": "person"}, {"id": 7, "name": "dog"}],
    "annotations": [
        {"id": 5, "image_id": 1, "category_id": 1, "bbox": [10, 20, 30.5, 40], "area": 1000.0,
         "iscrowd": 0},
        {"id": 6, "image_id": 1, "category_id": 7, "bbox": [0, 0, 64, 48], "area": 2.5,
         "iscrowd": 1, "ignore": 1},
        {"id": 9, "image_id": 2, "category_id": 7, "bbox": [1.25, 2.5, 3.75, 0.5], "iscrowd": 0},
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


@pytest.fixture
def coco_files(tmp_path: Path) -> tuple[Path, Path]:
    return _write(tmp_path / "results.json", RESULTS), _write(tmp_path / "gt.json", GT)


@pytest.mark.parametrize("api", [COCO, FasterCOCO], ids=["pycocotools", "faster-coco-eval"])
def test_coco_equals_pycocotools_reading(coco_files: tuple[Path, Path], api: type) -> None:
    """pycocotools' ``COCO`` and ``loadRes`` (and faster-coco-eval's, a second check) read
    the same files to the same boxes, areas and ids."""
    results, gt = coco_files
    got = read_coco(results, gt)
    with contextlib.redirect_stdout(io.StringIO()):
        coco = api(str(gt))
        res = coco.loadRes(str(results))
    dets = got.detections.to_pylist()
    assert len(dets) == len(res.anns)
    for d in dets:
        ann = res.anns[d["det_id"] + 1]  # loadRes: ann['id'] = id+1
        assert (d["image_id"], d["category_id"]) == (str(ann["image_id"]), str(ann["category_id"]))
        assert [d["x"], d["y"], d["w"], d["h"]] == [float(v) for v in ann["bbox"]]
        assert d["area"] == ann["area"] and d["score"] == ann["score"]
    truth = {r["gt_id"]: r for r in got.ground_truth.to_pylist()}
    assert sorted(truth) == sorted(str(i) for i in coco.anns)
    for ann_id, ann in coco.anns.items():
        row = truth[str(ann_id)]
        assert [row["x"], row["y"], row["w"], row["h"]] == [float(v) for v in ann["bbox"]]
        assert row["area"] == ann.get("area", ann["bbox"][2] * ann["bbox"][3])
        assert row["iscrowd"] == bool(ann["iscrowd"])
        assert row["ignore"] == (bool(ann["ignore"]) if "ignore" in ann else None)
        assert row["difficult"] is None and row["x1"] is None
    assert got.images.to_pylist()[2] == {
        "image_id": "30", "file_name": "c.jpg", "width": 100, "height": 100
    }  # fmt: skip
    assert got.categories.to_pylist() == [
        {"category_id": "1", "name": "person"}, {"category_id": "7", "name": "dog"}
    ]  # fmt: skip


def test_coco_numbers_parse_as_python_floats(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    texts = [f"{v:.17g}" for v in rng.random(200) * 10.0 ** rng.integers(-8, 8, 200)]
    texts += ["0.1000000000000000055511151231257827", "1e-320", "123456789012345678901"]
    body = ",".join(
        f'{{"image_id": 1, "category_id": 1, "bbox": [{t}, 0, {t}, 1], "score": {t}}}'
        for t in texts
    )
    (tmp_path / "r.json").write_text(f"[{body}]")
    got = read_coco(tmp_path / "r.json", _write(tmp_path / "gt.json", GT)).detections
    assert got["score"].to_pylist() == [float(t) for t in texts]
    assert got["w"].to_pylist() == [float(t) for t in texts]


def test_coco_string_ids_and_empty_results(tmp_path: Path) -> None:
    gt = {
        "images": [{"id": "img-a"}], "categories": [{"id": "cat", "name": "c"}],
        "annotations": [
            {"id": "g1", "image_id": "img-a", "category_id": "cat", "bbox": [0, 0, 1, 1]}
        ],
    }  # fmt: skip
    res = [{"image_id": "img-a", "category_id": "cat", "bbox": [0, 0, 1, 2], "score": 1}]
    got = read_coco(_write(tmp_path / "r.json", res), _write(tmp_path / "gt.json", gt))
    assert got.detections["image_id"].to_pylist() == ["img-a"]
    assert got.ground_truth["area"].to_pylist() == [1.0]  # no area: w*h
    empty = read_coco(_write(tmp_path / "e.json", []), tmp_path / "gt.json")
    assert empty.detections.num_rows == 0 and empty.detections.schema == got.detections.schema
    with pytest.raises(InvalidInput, match=r'record 1: image_id "1" is not an image'):
        bad = [RESULTS[0], dict(RESULTS[0], image_id="1")]  # a string, the file's ids are ints
        read_coco(_write(tmp_path / "b.json", bad), _write(tmp_path / "g2.json", GT))


def _one(**change: object) -> list[dict]:
    return [RESULTS[0], dict(RESULTS[1], **change)]


@pytest.mark.parametrize(
    ("results", "message"),
    [
        (_one(bbox=[1, 2, -3, 4]), "record 1: bbox has a negative width (-3.0)"),
        (_one(bbox=[1, 2, 3, -0.5]), "record 1: bbox has a negative height (-0.5)"),
        (_one(bbox=[1, 2, 3, float("nan")]), "record 1: bbox has a NaN height (nan)"),
        (_one(bbox=[float("inf"), 2, 3, 4]), "record 1: bbox has an infinite x (inf)"),
        (_one(bbox=[1, 2, 3]), "record 1: bbox is not a list of 4 numbers"),
        (_one(bbox=[1, 2, 3, "x"]), "record 1: bbox is not a list of 4 numbers"),
        (_one(score=float("nan")), "record 1: score is NaN"),
        (_one(score="high"), "record 1: score is not a number"),
        (_one(image_id=None), "record 1: no image_id"),
        (_one(image_id=1.5), "record 1: image_id 1.5 is not an integer or a string"),
        (_one(image_id=4), "record 1: image_id 4 is not an image of {gt}"),
        (_one(category_id=3), "record 1: category_id 3 is not a category of {gt}"),
        (
            [dict(r, image_id=r["image_id"] + 1000) for r in RESULTS],
            "none of its image ids is in {gt} (first 1001): a results file for another "
            "annotation file?",
        ),
    ],
)
def test_coco_result_errors(tmp_path: Path, results: list, message: str) -> None:
    gt = _write(tmp_path / "gt.json", GT)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))  # NaN and Infinity as Python writes them
    with pytest.raises(InvalidInput) as err:
        read_coco(path, gt)
    assert str(err.value) == f"{path}: " + message.format(gt=gt)


def test_coco_batches_keep_file_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert coco.BATCH >= 1 << 14
    monkeypatch.setattr(coco, "BATCH", 4)  # 11 records: 3 batches
    rows = [dict(RESULTS[i % 4], score=i / 11) for i in range(11)]
    gt = _write(tmp_path / "gt.json", GT)
    got = read_coco(_write(tmp_path / "r.json", rows), gt).detections
    assert got["det_id"].to_pylist() == list(range(11))
    assert got["score"].to_pylist() == [i / 11 for i in range(11)]
    rows[9]["bbox"] = [0, 0, -1, 1]
    path = _write(tmp_path / "r.json", rows)
    with pytest.raises(InvalidInput, match=r"r.json: record 9: bbox has a negative width"):
        read_coco(path, gt)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[{"image_id": 1, "bbox": [1,2,3,4]\n  "score": 1}]', "malformed JSON at line 2 column 3"),
        ('[{"image_id": 1}', "malformed JSON at line 1 column 17"),
        ('{"image_id": 1}', "not a JSON array (COCO results are a list of objects)"),
        ("[1, 2]", "an element of the array is not an object"),
    ],
)
def test_coco_malformed_results(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "results.json"
    path.write_text(text)
    with pytest.raises(InvalidInput) as err:
        read_coco(path, _write(tmp_path / "gt.json", GT))
    assert str(err.value).startswith(f"{path}: {message}")
    assert "\n" not in str(err.value)
    if "line" in message:  # the position Python's json module gives too
        with pytest.raises(json.JSONDecodeError) as py:
            json.loads(text)
        assert f"line {py.value.lineno} column {py.value.colno}" in message


def _gt_with(**change: object) -> dict:
    gt = json.loads(json.dumps(GT))
    for key, value in change.items():
        section, index, field = key.split("__")
        gt[section][int(index)][field] = value
    return gt


@pytest.mark.parametrize(
    ("gt", "message"),
    [
        (_gt_with(annotations__1__id=5), "annotations[1]: duplicate id 5 (also annotations[0])"),
        (_gt_with(images__2__id=2), "images[2]: duplicate id 2 (also images[1])"),
        (
            _gt_with(annotations__2__bbox=[0, 0, -1, 2]),
            "annotations[2]: bbox has a negative width (-1.0)",
        ),
        (
            _gt_with(annotations__2__image_id=99),
            "annotations[2]: image_id 99 is not in the file's images",
        ),
        (
            _gt_with(annotations__0__category_id=2),
            "annotations[0]: category_id 2 is not in the file's categories",
        ),
        (_gt_with(annotations__0__iscrowd=2), "annotations[0]: iscrowd 2 is not 0 or 1"),
        (_gt_with(images__0__width=-3), "images[0]: width -3 is not an integer >= 0"),
    ],
)
def test_coco_annotation_errors(tmp_path: Path, gt: dict, message: str) -> None:
    gt_path = _write(tmp_path / "gt.json", gt)
    with pytest.raises(InvalidInput) as err:
        read_coco(_write(tmp_path / "r.json", RESULTS), gt_path)
    assert str(err.value) == f"{gt_path}: {message}"


def test_coco_malformed_annotation_file(tmp_path: Path) -> None:
    gt = tmp_path / "gt.json"
    gt.write_text('{"images": [\n  {"id": 1,}]}')
    with pytest.raises(InvalidInput) as err:
        read_coco(_write(tmp_path / "r.json", RESULTS), gt)
    with pytest.raises(json.JSONDecodeError) as py:
        json.loads(gt.read_text())
    assert (py.value.lineno, py.value.colno) == (2, 12)
    assert str(err.value) == f"{gt}: malformed JSON at line 2 column 12: {py.value.msg}"


# VmHWM, the peak of this process's own memory (ru_maxrss would count the parent's pages
# at the fork)
_MEASURE = """
import re, sys
from pathlib import Path
from evalstore.ingest.formats.coco import read_coco
from evalstore.ingest.formats.voc_det import read_voc_det
got = read_coco(sys.argv[1], sys.argv[2]).detections
assert got.num_rows == int(sys.argv[3])
peak = int(re.search(r"VmHWM:\\s+(\\d+) kB", Path("/proc/self/status").read_text()).group(1))
print(got.nbytes, peak * 1024, got["score"][7].as_py())
"""


def _results_file(path: Path, n: int) -> Path:
    rng = np.random.default_rng(n)
    image = rng.choice([1, 2, 30], n)
    xywh = np.round(rng.random((n, 4)) * 500, 3)
    score = rng.random(n)
    with path.open("w") as f:
        f.write("[")
        f.write(
            ",".join(
                f'{{"image_id":{i},"category_id":7,"bbox":[{b[0]},{b[1]},{b[2]},{b[3]}],'
                f'"score":{s!r}}}'
                for i, b, s in zip(image.tolist(), xywh.tolist(), score.tolist(), strict=True)
            )
        )
        f.write("]")
    return path


@pytest.mark.slow
def test_coco_million_detections_bounded_memory(tmp_path: Path) -> None:
    """Peak memory grows with the tables returned, not with the file: from 250,000 to
    1,000,000 detections the process grows by at most 1.6 times the growth of the output
    (measured 1.2; ``json.load`` alone of the larger file takes 3.5 times its output)."""
    gt = _write(tmp_path / "gt.json", GT)
    peaks = {}
    for n in (250_000, 1_000_000):
        path = _results_file(tmp_path / f"r{n}.json", n)
        out = subprocess.run(
            [sys.executable, "-c", _MEASURE, str(path), str(gt), str(n)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        nbytes, peak, score = out.stdout.split()
        peaks[n] = (int(nbytes), int(peak))
        rng = np.random.default_rng(n)
        rng.choice([1, 2, 30], n), rng.random((n, 4))
        assert float(score) == rng.random(n)[7]
    (small_out, small_peak), (big_out, big_peak) = peaks[250_000], peaks[1_000_000]
    assert big_peak - small_peak < 1.6 * (big_out - small_out), peaks
    assert big_peak < 640 << 20, peaks  # measured 437 MB (json.load of the file: 638 MB)


# --- PASCAL VOC -----------------------------------------------------------------------------


def _voc_object(name: str, box: tuple[int, ...], difficult: str | None = "0") -> str:
    flag = "" if difficult is None else f"<difficult>{difficult}</difficult>"
    tags = ("xmin", "ymin", "xmax", "ymax")
    corners = "".join(f"<{t}>{v}</{t}>" for t, v in zip(tags, box, strict=True))
    return (
        f"<object><name>{name}</name><pose>Left</pose><truncated>0</truncated>{flag}"
        f"<bndbox>{corners}</bndbox></object>"
    )


def _voc_xml(image_id: str, objects: list[str]) -> str:
    return (
        f"<annotation><folder>VOC2007</folder><filename>{image_id}.jpg</filename>"
        "<size><width>500</width><height>375</height><depth>3</depth></size>"
        + "".join(objects)
        + "</annotation>"
    )


@pytest.fixture
def voc(tmp_path: Path) -> tuple[list[Path], Path, Path]:
    ann = tmp_path / "Annotations"
    ann.mkdir()
    (ann / "000001.xml").write_text(
        _voc_xml("000001", [_voc_object("dog", (48, 240, 195, 371)),
                            _voc_object("person", (8, 12, 352, 498), "1")])
    )  # fmt: skip
    (ann / "000002.xml").write_text(_voc_xml("000002", [_voc_object("dog", (1, 1, 10, 20))]))
    (ann / "000003.xml").write_text(_voc_xml("000003", []))
    imageset = tmp_path / "test.txt"
    imageset.write_text("000001\n000002\r\n000003\n")
    dog = tmp_path / "comp4_det_test_dog.txt"
    dog.write_text("000001 0.702 47.5 239.0 196.1 370.9\n000002 0.1 0 0 12 19.75\n")
    person = tmp_path / "comp4_det_test_person.txt"
    person.write_text("000001 -1.5 10 10 350.25 490\n000003  1e-3   1 2  3 4  \n")
    return [dog, person], ann, imageset


def _parse_rec(filename: Path) -> list[dict]:
    """py-faster-rcnn ``parse_rec`` (rbgirshick/py-faster-rcnn lib/datasets/voc_eval.py @
    781a917b378dbfdedb45b6a56189a31982da1b43), verbatim but for Python 3's imports."""
    import xml.etree.ElementTree as ET

    tree = ET.parse(filename)
    objects = []
    for obj in tree.findall("object"):
        obj_struct = {}
        obj_struct["name"] = obj.find("name").text
        obj_struct["pose"] = obj.find("pose").text
        obj_struct["truncated"] = int(obj.find("truncated").text)
        obj_struct["difficult"] = int(obj.find("difficult").text)
        bbox = obj.find("bndbox")
        obj_struct["bbox"] = [
            int(bbox.find("xmin").text),
            int(bbox.find("ymin").text),
            int(bbox.find("xmax").text),
            int(bbox.find("ymax").text),
        ]
        objects.append(obj_struct)
    return objects


def _voc_eval_detections(detfile: Path) -> tuple[list[str], np.ndarray, np.ndarray]:
    """How ``voc_eval`` (same file and commit) reads a class's detections::

    splitlines = [x.strip().split(' ') for x in lines]
    image_ids = [x[0] for x in splitlines]
    confidence = np.array([float(x[1]) for x in splitlines])
    BB = np.array([[float(z) for z in x[2:]] for x in splitlines])

    (split on runs of white space here, as ``split()``, since the fixture pads a line)."""
    with open(detfile) as f:
        lines = f.readlines()
    splitlines = [x.strip().split() for x in lines]
    image_ids = [x[0] for x in splitlines]
    confidence = np.array([float(x[1]) for x in splitlines])
    BB = np.array([[float(z) for z in x[2:]] for x in splitlines])
    return image_ids, confidence, BB


def test_voc_equals_voc_eval_reading(voc: tuple[list[Path], Path, Path]) -> None:
    results, ann, imageset = voc
    got = read_voc_det(results, ann, imageset)
    dets = got.detections.to_pylist()
    assert [d["det_id"] for d in dets] == list(range(4))
    for cls, path in zip(("dog", "person"), results, strict=True):
        ids, confidence, bb = _voc_eval_detections(path)
        mine = [d for d in dets if d["category_id"] == cls]
        assert [d["image_id"] for d in mine] == ids
        assert [d["score"] for d in mine] == confidence.tolist()
        assert [[d["x1"], d["y1"], d["x2"], d["y2"]] for d in mine] == bb.tolist()
        assert [[d["x"], d["y"], d["w"], d["h"]] for d in mine] == [
            [b[0], b[1], b[2] - b[0], b[3] - b[1]] for b in bb.tolist()
        ]
        assert [d["area"] for d in mine] == [(b[2] - b[0]) * (b[3] - b[1]) for b in bb.tolist()]
    truth = got.ground_truth.to_pylist()
    expected = [
        (image_id, obj) for image_id in ("000001", "000002", "000003")
        for obj in _parse_rec(ann / f"{image_id}.xml")
    ]  # fmt: skip
    assert len(truth) == len(expected) == 3
    for row, (image_id, obj) in zip(truth, expected, strict=True):
        assert (row["image_id"], row["category_id"]) == (image_id, obj["name"])
        assert row["difficult"] == bool(obj["difficult"]) and row["iscrowd"] is False
        assert [row["x1"], row["y1"], row["x2"], row["y2"]] == obj["bbox"]
    assert got.images.to_pylist()[0] == {
        "image_id": "000001", "file_name": "000001.jpg", "width": 500, "height": 375
    }  # fmt: skip
    assert got.categories["category_id"].to_pylist() == ["dog", "person"]


def test_voc_missing_difficult_is_zero(tmp_path: Path) -> None:
    (tmp_path / "a.xml").write_text(_voc_xml("a", [_voc_object("cat", (1, 2, 3, 4), None)]))
    (tmp_path / "set.txt").write_text("a\n")
    res = tmp_path / "comp3_det_val_cat.txt"
    res.write_text("")
    got = read_voc_det([res], tmp_path, tmp_path / "set.txt")
    assert got.ground_truth["difficult"].to_pylist() == [False]
    assert got.detections.num_rows == 0


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("000009 0.5 1 2 3 4", "line 2: image '000009' is not in {imageset}"),
        ("000001 0.5 1 2 3",
         "line 2: expected 'image_id score x1 y1 x2 y2', got '000001 0.5 1 2 3'"),
        ("000001 0.5 5 2 3 4", "line 2: x2 3 < x1 5"),
        ("000001 0.5 1 9 3 4", "line 2: y2 4 < y1 9"),
        ("000001 high 1 2 3 4", "line 2: score 'high' is not a number"),
        ("000001 nan 1 2 3 4", "line 2: score is NaN"),
        ("000001 0.5 1 2 nan 4", "line 2: x2 'nan' is not a finite number"),
    ],
)  # fmt: skip
def test_voc_result_errors(voc: tuple[list[Path], Path, Path], line: str, message: str) -> None:
    results, ann, imageset = voc
    results[1].write_text(f"000001 0.5 1 2 3 4\n{line}\n")
    with pytest.raises(InvalidInput) as err:
        read_voc_det(results, ann, imageset)
    assert str(err.value) == f"{results[1]} " + message.format(imageset=imageset)


def test_voc_file_errors(voc: tuple[list[Path], Path, Path], tmp_path: Path) -> None:
    results, ann, imageset = voc
    wrong = tmp_path / "dog_results.txt"
    wrong.write_text("")
    with pytest.raises(InvalidInput) as err:
        read_voc_det([wrong], ann, imageset)
    assert str(err.value) == (
        f"{wrong}: not a VOC detection result file (comp<N>_det_<set>_<class>.txt)"
    )
    (ann / "000002.xml").write_text("<annotation>\n<size></annotation>")
    with pytest.raises(InvalidInput) as err:
        read_voc_det(results, ann, imageset)
    assert str(err.value) == f"{ann / '000002.xml'}: malformed XML at line 2 column 9"
    (ann / "000002.xml").write_text(_voc_xml("000002", [_voc_object("dog", (9, 1, 2, 20))]))
    with pytest.raises(InvalidInput) as err:
        read_voc_det(results, ann, imageset)
    assert str(err.value) == f"{ann / '000002.xml'}: object 0: xmax 2 < xmin 9"
    (ann / "000002.xml").unlink()
    with pytest.raises(InvalidInput, match=r"000002\.xml: "):
        read_voc_det(results, ann, imageset)


# --- box tables -----------------------------------------------------------------------------

_DET_COLS = ["det_id", "image_id", "category_id", "x", "y", "w", "h", "score", "area"]
_GT_COLS = ["gt_id", "image_id", "category_id", "x", "y", "w", "h", "area", "iscrowd", "ignore"]


def _as_format(frame: pl.DataFrame, fmt: str) -> pl.DataFrame:
    """COCO's [x, y, w, h] columns rewritten as ``fmt``'s (exact for the fixtures' dyadic
    values)."""
    x, y, w, h = (pl.col(c) for c in "xywh")
    boxes = {
        "xyxy": [x.alias("x1"), y.alias("y1"), (x + w).alias("x2"), (y + h).alias("y2")],
        "xywh": [x, y, w, h],
        "cxcywh": [(x + w / 2).alias("cx"), (y + h / 2).alias("cy"), w, h],
    }[fmt]
    return frame.select(*(c for c in frame.columns if c not in ("x", "y", "w", "h")), *boxes)


def _save(frame: pl.DataFrame, path: Path) -> Path:
    {"parquet": frame.write_parquet, "csv": frame.write_csv, "ndjson": frame.write_ndjson}[
        path.suffix[1:]
    ](path)
    return path


@pytest.mark.parametrize("fmt", ["xyxy", "xywh", "cxcywh"])
@pytest.mark.parametrize("kind", ["parquet", "csv", "ndjson", "polars", "pandas", "arrow"])
def test_boxes_round_trip_from_coco(
    coco_files: tuple[Path, Path], tmp_path: Path, fmt: str, kind: str
) -> None:
    coco_input = read_coco(*coco_files)
    dets = pl.from_arrow(coco_input.detections).select(
        "image_id", pl.col("category_id").alias("category"), "x", "y", "w", "h", "score"
    )
    truth = pl.from_arrow(coco_input.ground_truth).select(
        pl.col("gt_id").alias("id"), "image_id", pl.col("category_id").alias("label"),
        "x", "y", "w", "h", "area", pl.col("iscrowd").cast(pl.Int8), pl.col("ignore").cast(pl.Int8),
    )  # fmt: skip
    data = [_as_format(dets, fmt), _as_format(truth, fmt)]
    if kind in ("parquet", "csv", "ndjson"):
        inputs = [_save(f, tmp_path / f"{n}.{kind}") for f, n in zip(data, ("d", "g"), strict=True)]
    else:
        convert = {
            "polars": lambda f: f,
            "pandas": pl.DataFrame.to_pandas,
            "arrow": pl.DataFrame.to_arrow,
        }
        inputs = [convert[kind](f) for f in data]  # type: ignore[operator]
        assert kind != "pandas" or isinstance(inputs[0], pd.DataFrame)
    got = read_boxes(*inputs, box_format=fmt)
    assert got.detections.select(_DET_COLS).equals(coco_input.detections.select(_DET_COLS))
    assert got.ground_truth.select(_GT_COLS).equals(coco_input.ground_truth.select(_GT_COLS))
    corners = got.detections.select(["x1", "y1", "x2", "y2"]).to_pylist()
    assert all(v is not None for c in corners for v in c.values()) == (fmt == "xyxy")
    assert got.images["image_id"].to_pylist() == ["1", "2", "30"]
    assert got.categories["category_id"].to_pylist() == ["1", "7"]


def test_boxes_round_trip_from_voc(voc: tuple[list[Path], Path, Path], tmp_path: Path) -> None:
    voc_input = read_voc_det(*voc)
    dets = pl.from_arrow(voc_input.detections)
    truth = pl.from_arrow(voc_input.ground_truth).drop("ignore")
    got = read_boxes(
        _save(dets.rename({"category_id": "category"}), tmp_path / "d.csv"),
        truth.with_columns(pl.col("difficult").cast(pl.Int8)),
        box_format="xyxy",
    )
    assert got.detections.equals(voc_input.detections)
    assert got.ground_truth.equals(voc_input.ground_truth)


def test_boxes_torchmetrics_lists() -> None:
    preds = [
        {
            "boxes": np.array([[10.0, 20, 40, 60], [0, 0, 1, 1]]),
            "scores": np.array([0.9, 0.2]),
            "labels": np.array([3, 1]),
        },
        {"boxes": np.zeros((0, 4)), "scores": np.zeros(0), "labels": np.zeros(0, dtype=int)},
    ]
    target = [
        {"boxes": np.array([[10.0, 20, 30, 50]]), "labels": np.array([3]),
         "iscrowd": np.array([1])},
        {"boxes": np.array([[5.0, 5, 6, 7]]), "labels": np.array([1]), "area": np.array([9.5])},
    ]  # fmt: skip
    got = read_boxes(preds, target, box_format="xyxy")
    assert got.detections.select(_DET_COLS).to_pylist() == [
        {"det_id": 0, "image_id": "0", "category_id": "3", "x": 10.0, "y": 20.0, "w": 30.0,
         "h": 40.0, "score": 0.9, "area": 1200.0},
        {"det_id": 1, "image_id": "0", "category_id": "1", "x": 0.0, "y": 0.0, "w": 1.0,
         "h": 1.0, "score": 0.2, "area": 1.0},
    ]  # fmt: skip
    truth = got.ground_truth.to_pylist()
    assert [(r["gt_id"], r["image_id"], r["area"], r["iscrowd"]) for r in truth] == [
        ("0", "0", 600.0, True), ("1", "1", 9.5, False)
    ]  # fmt: skip
    assert got.images["image_id"].to_pylist() == ["0", "1"]


@pytest.mark.parametrize(
    ("dets", "message"),
    [
        ({"image_id": ["a"], "label": [1], "x": [0.0], "y": [0.0], "w": [-1.0], "h": [1.0],
          "score": [0.5]}, "detections: row 0: box has a negative width (-1.0)"),
        ({"image_id": ["a", "b"], "label": [1, 1], "x": [0.0, 0], "y": [0.0, 0], "w": [1.0, 1],
          "h": [1.0, 1], "score": [0.5, float("nan")]}, "detections: row 1: score is NaN"),
        ({"image_id": ["a"], "x": [0.0], "y": [0.0], "w": [1.0], "h": [1.0], "score": [0.5]},
         "detections: no column 'category' or 'category_id' or 'label'"),
        ({"image_id": ["a"], "label": [1], "x": [0.0], "y": [0.0], "w": [1.0], "h": [1.0]},
         "detections: no column 'score'"),
    ],
)  # fmt: skip
def test_boxes_frame_errors(dets: dict, message: str) -> None:
    truth = pl.DataFrame({"image_id": ["a"], "label": [1], "x": [0.0], "y": [0.0], "w": [1.0],
                          "h": [1.0]})  # fmt: skip
    with pytest.raises(InvalidInput) as err:
        read_boxes(pl.DataFrame(dets), truth, box_format="xywh")
    assert str(err.value) == message


def test_boxes_file_and_list_errors(tmp_path: Path) -> None:
    csv = tmp_path / "g.csv"
    csv.write_text("image_id,label,x1,y1,x2,y2,difficult\na,1,0,0,1,1,0\nb,1,0,0,1,x,0\n")
    dets = pl.DataFrame({"image_id": ["a"], "label": [1], "x1": [0.0], "y1": [0.0], "x2": [1.0],
                         "y2": [1.0], "score": [1.0]})  # fmt: skip
    with pytest.raises(InvalidInput) as err:
        read_boxes(dets, csv, box_format="xyxy")
    assert str(err.value) == f"{csv}: row 1: y2 'x' is not a number"
    csv.write_text("image_id,label,x1,y1,x2,y2,difficult\na,1,0,0,1,1,2\n")
    with pytest.raises(InvalidInput) as err:
        read_boxes(dets, csv, box_format="xyxy")
    assert str(err.value) == f"{csv}: row 0: difficult '2' is not 0 or 1"
    with pytest.raises(InvalidInput) as err:
        read_boxes(dets, csv, box_format="yolo")
    assert str(err.value) == "box_format 'yolo': expected one of xyxy, xywh, cxcywh"
    one = {"boxes": np.array([[0.0, 0, 2, 1]]), "labels": np.array([1])}
    with pytest.raises(InvalidInput) as err:
        read_boxes([dict(one, scores=np.array([1.0]))], [one, one], box_format="xyxy")
    assert str(err.value) == "detections: 1 images, ground_truth: 2 (lists of one dict per image)"
    with pytest.raises(InvalidInput) as err:
        read_boxes(
            [dict(one, scores=np.array([1.0]))],
            [dict(one, boxes=[[2, 0, 1, 1]])],
            box_format="xyxy",
        )
    assert str(err.value) == "ground_truth[0] box 0: box has a negative width (-1.0)"
    with pytest.raises(InvalidInput) as err:
        read_boxes([one], [one], box_format="xyxy")
    assert str(err.value) == "detections[0]: no 'scores'"


@pytest.mark.parametrize(
    ("ids", "message"),
    [([7, 7], "ground_truth: row 1: id '7' again (annotation ids are unique)"),
     (["a", None], "ground_truth: row 1: id missing (annotation ids are unique)")],
)  # fmt: skip
def test_boxes_annotation_ids_name_one_box(ids: list, message: str) -> None:
    """An annotation id of the ground truth (``gt_id`` or ``id``) names one box: the
    matches and ``diff --items`` name boxes by it."""
    truth = pl.DataFrame({"image_id": ["a", "a"], "label": [1, 1], "x": [0.0, 5.0],
                          "y": [0.0, 5.0], "w": [1.0, 1.0], "h": [1.0, 1.0],
                          "id": ids})  # fmt: skip
    dets = truth.drop("id").with_columns(score=pl.lit(0.5))
    with pytest.raises(InvalidInput) as err:
        read_boxes(dets, truth, box_format="xywh")
    assert str(err.value) == message
    assert read_boxes(dets, truth.drop("id"), box_format="xywh").ground_truth.num_rows == 2
