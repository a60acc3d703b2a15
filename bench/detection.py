"""Whole-process benchmark of COCO box evaluation on a COCO-val-sized synthetic set.

    python bench/detection.py [--images 5000] [--repeat 3] [--seed 0]

Writes an annotation file and a results file in COCO's JSON formats (not measured): ``--images``
images of 640 x 480 .. 640 x 640, 80 categories, 7 ground-truth boxes per image on average
(about 35,000 for 5,000 images; 1 % crowd regions), and 100 detections per image (about 60 %
jittered copies of a ground-truth box, some with the wrong category, the rest random boxes;
scores rounded to 3 decimals, so ties occur). Then runs each reference ``--repeat`` times,
alternated, in a fresh process under ``/usr/bin/time -v``: load both files, evaluate,
accumulate, summarize, print the 12 numbers as JSON:

  - pycocotools: ``COCO``, ``loadRes``, ``COCOeval(..., "bbox")``;
  - faster-coco-eval: ``COCO``, ``loadRes``, ``COCOeval_faster(..., "bbox")``;
  - hotcoco, when it is installed.

Prints each one's median CPU seconds (user + sys, all threads), wall seconds, peak memory and
whether its 12 numbers equal pycocotools' (to 1e-12). These are the figures evalstore's own
``ingest --format coco`` + ``eval --protocol coco`` is to be measured against (issue 31:
at or below faster-coco-eval's CPU and memory).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _measure
from _measure import MIB, Measured

NAMES = ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl")
TOL = 1e-12

_EVAL = """
import contextlib, io, json, sys
gt_path, dt_path = sys.argv[1:3]
with contextlib.redirect_stdout(io.StringIO()):
    gt = COCO(gt_path)
    dt = gt.loadRes(dt_path)
    e = EVAL(gt, dt, "bbox")
    e.evaluate(); e.accumulate(); e.summarize()
print(json.dumps([float(v) for v in e.stats[:12]]))
"""
REFERENCES = {
    "pycocotools": "from pycocotools.coco import COCO\n"
    "from pycocotools.cocoeval import COCOeval as EVAL\n" + _EVAL,
    "faster-coco-eval": "from faster_coco_eval import COCO\n"
    "from faster_coco_eval import COCOeval_faster as EVAL\n" + _EVAL,
    "hotcoco": "from hotcoco import COCO, COCOeval as EVAL\n" + _EVAL,
}
MODULES = {n: n.replace("-", "_") for n in REFERENCES}  # the module each imports


def _box(x: float, y: float, w: float, h: float) -> list[float]:
    return [round(float(v), 2) for v in (x, y, w, h)]


def synthetic_coco(n_images: int, seed: int) -> tuple[dict, list[dict]]:
    """A COCO annotation file and a results list (see the module docstring)."""
    rng = np.random.default_rng(seed)
    categories = [{"id": c, "name": f"class{c}"} for c in range(1, 81)]
    images, annotations, results = [], [], []
    for image_id in range(1, n_images + 1):
        width, height = 640, int(rng.integers(480, 641))
        name = f"{image_id:012d}.jpg"
        images.append({"id": image_id, "width": width, "height": height, "file_name": name})
        n_gt = int(rng.poisson(7))
        wh = np.exp(rng.uniform(np.log(8), np.log(400), size=(n_gt, 2)))
        xy = rng.uniform(0, 1, size=(n_gt, 2)) * np.maximum([width, height] - wh, 1)
        cats = rng.integers(1, 81, size=n_gt)
        for (x, y), (w, h), c in zip(xy, wh, cats, strict=True):
            crowd = int(rng.random() < 0.01)
            annotations.append({
                "id": len(annotations) + 1, "image_id": image_id, "category_id": int(c),
                "bbox": _box(x, y, w, h), "area": round(float(w * h) * 0.8, 2), "iscrowd": crowd,
            })  # fmt: skip
        for _ in range(100):
            if n_gt and rng.random() < 0.6:
                g = int(rng.integers(n_gt))
                x, y = xy[g] + rng.normal(0, 0.1, 2) * wh[g]
                w, h = wh[g] * rng.uniform(0.7, 1.3, 2)
                c = int(cats[g]) if rng.random() < 0.8 else int(rng.integers(1, 81))
            else:
                w, h = np.exp(rng.uniform(np.log(8), np.log(400), size=2))
                x, y = rng.uniform(0, width - w), rng.uniform(0, max(height - h, 1))
                c = int(rng.integers(1, 81))
            results.append({
                "image_id": image_id, "category_id": c, "bbox": _box(x, y, w, h),
                "score": round(float(rng.random()), 3),
            })  # fmt: skip
    return {"images": images, "annotations": annotations, "categories": categories}, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(_measure.load_note())
    with tempfile.TemporaryDirectory() as tmp:
        gt, results = synthetic_coco(args.images, args.seed)
        gt_path, dt_path = Path(tmp) / "instances.json", Path(tmp) / "results.json"
        gt_path.write_text(json.dumps(gt))
        dt_path.write_text(json.dumps(results))
        print(
            f"{len(gt['images'])} images, {len(gt['annotations'])} ground-truth boxes, "
            f"{len(results)} detections, 80 categories; files "
            f"{gt_path.stat().st_size / MIB:.1f} + {dt_path.stat().st_size / MIB:.1f} MiB"
        )
        names = [n for n in REFERENCES if importlib.util.find_spec(MODULES[n]) is not None]
        runs: dict[str, list[Measured]] = {n: [] for n in names}
        for _ in range(args.repeat):
            for name in names:
                runs[name].append(_measure.python(REFERENCES[name], gt_path, dt_path))
    truth = json.loads(runs["pycocotools"][0].last_line())
    print(f"{'reference':18} {'CPU s':>7} {'wall s':>7} {'peak GiB':>9}  12 numbers")
    for name in names:
        m = _measure.median(runs[name])
        stats = json.loads(m.last_line())
        same = max(abs(a - b) for a, b in zip(stats, truth, strict=True)) <= TOL
        print(
            f"{name:18} {m.cpu:7.2f} {m.wall:7.2f} {m.peak_bytes / 1024**3:9.2f}  "
            f"{'= pycocotools' if same else 'DIFFER from pycocotools'}"
        )
    print(", ".join(f"{n} {v:.4f}" for n, v in zip(NAMES, truth, strict=True)))


if __name__ == "__main__":
    main()
