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
import pytest
from pycocotools.coco import COCO

from evalstore.errors import InvalidInput
from evalstore.ingest.formats import coco
from evalstore.ingest.formats.coco import read_coco

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


def _quiet_coco(gt: Path, results: Path | list | None = None) -> tuple[COCO, COCO | None]:
    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO(str(gt))
        return coco, (coco.loadRes(str(results)) if results is not None else None)


def test_coco_equals_pycocotools_reading(coco_files: tuple[Path, Path]) -> None:
    results, gt = coco_files
    got = read_coco(results, gt)
    coco, res = _quiet_coco(gt, results)
    assert res is not None
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
