"""Whole-process benchmark of COCO box evaluation on a COCO-val-sized synthetic set.

    python bench/detection.py [--images 5000] [--repeat 3] [--seed 0] [--skip NAME]

Writes an annotation file and a results file in COCO's JSON formats (not measured): ``--images``
images of 640 x 480 .. 640 x 640, 80 categories, 7 ground-truth boxes per image on average
(about 35,000 for 5,000 images; 1 % crowd regions), and 100 detections per image (about 60 %
jittered copies of a ground-truth box, some with the wrong category, the rest random boxes;
scores rounded to 3 decimals, so ties occur). Then runs each tool ``--repeat`` times,
alternated, in a fresh process under ``/usr/bin/time -v``:

  - pycocotools: ``COCO``, ``loadRes``, ``COCOeval(..., "bbox")``, evaluate, accumulate,
    summarize, print the 12 numbers as JSON;
  - faster-coco-eval: the same with ``COCOeval_faster``;
  - hotcoco, when it is installed;
  - evalstore, from a new store: ``evalstore ingest RESULTS --format coco --coco-gt GT -r det/x``
    then ``evalstore eval det/x --protocol coco --format json`` (two processes: their CPU and
    wall seconds summed, the larger peak), which makes and stores the matches; then
    ``evalstore eval det/x --protocol coco --recompute`` on that store (a third process, the
    re-evaluation of a stored run: the matches are read, the 12 metric queries run again);
    then ``evalstore eval det/x --protocol voc10-det`` (a fourth: the re-evaluation of the
    stored run under another protocol, which makes and stores the VOC matching first);
  - the floor of those processes, on the same store: the same ``eval --protocol voc10-det``
    again (its value is stored: start-up, imports, the store opened, the value read back) and
    ``evalstore runs`` (start-up and one query).

Every measured process runs with its bytecode cached (``PYTHONPYCACHEPREFIX`` in the temporary
folder, written by one unmeasured run of each tool on a 20-image set first; this machine sets
``PYTHONDONTWRITEBYTECODE=1``, which would make each process compile what it imports).
Prints each one's median CPU seconds (user + sys, all threads), wall seconds and peak memory,
whether its 12 numbers equal pycocotools' (to 1e-12) and the largest difference, and evalstore's
ratios to faster-coco-eval and pycocotools. Targets (issue 31): evalstore's ingest + eval at or
below faster-coco-eval's CPU and memory; the re-evaluation under another protocol at most 2
CPU seconds (the floor says how much of them is the start-up of an ``eval`` process).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
from collections.abc import Sequence
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


RUN = "det/x"


class Evalstore:
    """The evalstore processes: a new store's ingest, its evaluations."""

    def __init__(self, env: dict[str, str | None]) -> None:
        self.env = env
        self.cli = Path(sys.executable).parent / "evalstore"

    def ingest(self, gt: Path, dt: Path, db: Path) -> Measured:
        argv = [self.cli, "ingest", dt, "--format", "coco", "--coco-gt", gt, "-r", RUN]
        return _measure.run([*map(str, argv), "--db", str(db)], env=self.env, cwd=db.parent)

    def runs(self, db: Path) -> Measured:
        return _measure.run([str(self.cli), "runs", "--db", str(db)], env=self.env, cwd=db.parent)

    def eval(self, db: Path, *, protocol: str = "coco", recompute: bool = False) -> Measured:
        argv = [str(self.cli), "eval", RUN, "--protocol", protocol, "--db", str(db)]
        extra = ["--recompute"] if recompute else []
        return _measure.run([*argv, *extra, "--format", "json"], env=self.env, cwd=db.parent)


def evalstore_stats(m: Measured) -> list[float]:
    """The 12 numbers in pycocotools' order from an eval's JSON (-1 where it has none)."""
    got = {row["metric"]: row["value"] for row in json.loads(m.stdout)}
    return [-1.0 if got.get(n) is None else float(got[n]) for n in NAMES]


def whole(parts: Sequence[Measured]) -> Measured:
    """Several processes run one after the other: CPU and wall summed, the larger peak."""
    return Measured(
        cpu=sum(m.cpu for m in parts),
        wall=sum(m.wall for m in parts),
        peak_bytes=max(m.peak_bytes for m in parts),
        stdout=parts[-1].stdout,
    )


def write_set(folder: Path, n_images: int, seed: int) -> tuple[Path, Path]:
    gt, results = synthetic_coco(n_images, seed)
    folder.mkdir(parents=True, exist_ok=True)
    gt_path, dt_path = folder / "instances.json", folder / "results.json"
    gt_path.write_text(json.dumps(gt))
    dt_path.write_text(json.dumps(results))
    return gt_path, dt_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--skip", action="append", default=[], help="a reference not to run (repeatable)"
    )
    args = parser.parse_args()
    print(_measure.load_note())
    names = [
        n
        for n in REFERENCES
        if importlib.util.find_spec(MODULES[n]) is not None and n not in args.skip
    ]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        env: dict[str, str | None] = {
            "PYTHONPYCACHEPREFIX": str(work / "pycache"),
            "PYTHONDONTWRITEBYTECODE": None,
        }
        ours = Evalstore(env)
        # one unmeasured run of each tool on a small set: every process then reads bytecode
        small_gt, small_dt = write_set(work / "small", 20, args.seed)
        for name in names:
            _measure.python(REFERENCES[name], small_gt, small_dt, env=env)
        ours.ingest(small_gt, small_dt, work / "small" / "store.duckdb")
        ours.eval(work / "small" / "store.duckdb")
        gt_path, dt_path = write_set(work, args.images, args.seed)
        gt = json.loads(gt_path.read_text())
        print(
            f"{len(gt['images'])} images, {len(gt['annotations'])} ground-truth boxes, "
            f"{args.images * 100} detections, 80 categories; files "
            f"{gt_path.stat().st_size / MIB:.1f} + {dt_path.stat().st_size / MIB:.1f} MiB"
        )
        runs: dict[str, list[Measured]] = {n: [] for n in names}
        steps = ("ingest", "eval", "recompute", "voc", "voc stored", "runs")
        parts: dict[str, list[Measured]] = {k: [] for k in steps}
        for i in range(args.repeat):
            for name in names:
                runs[name].append(_measure.python(REFERENCES[name], gt_path, dt_path, env=env))
            db = work / f"store{i}.duckdb"
            parts["ingest"].append(ours.ingest(gt_path, dt_path, db))
            parts["eval"].append(ours.eval(db))
            parts["recompute"].append(ours.eval(db, recompute=True))
            parts["voc"].append(ours.eval(db, protocol="voc10-det"))
            parts["voc stored"].append(ours.eval(db, protocol="voc10-det"))
            parts["runs"].append(ours.runs(db))
            db.unlink()
        print(_measure.load_note())
    report(names, runs, parts)


def report(
    names: list[str],
    runs: dict[str, list[Measured]],
    parts: dict[str, list[Measured]],
) -> None:
    combined = [whole(p) for p in zip(parts["ingest"], parts["eval"], strict=True)]
    truth = json.loads(runs["pycocotools"][0].last_line()) if "pycocotools" in runs else None
    rows = {n: (_measure.median(runs[n]), json.loads(runs[n][-1].last_line())) for n in names}
    rows["evalstore: ingest + eval, new store"] = (
        _measure.median(combined),
        evalstore_stats(parts["eval"][0]),
    )
    rows["  of which ingest"] = (_measure.median(parts["ingest"]), None)
    rows["  of which eval (makes the matches)"] = (_measure.median(parts["eval"]), None)
    rows["evalstore: eval --recompute"] = (
        _measure.median(parts["recompute"]),
        evalstore_stats(parts["recompute"][-1]),
    )
    rows["evalstore: eval --protocol voc10-det"] = (_measure.median(parts["voc"]), None)
    rows["  floor: the same, its value stored"] = (_measure.median(parts["voc stored"]), None)
    rows["  floor: evalstore runs"] = (_measure.median(parts["runs"]), None)
    print(f"{'':40} {'CPU s':>7} {'wall s':>7} {'peak GiB':>9}  12 numbers vs pycocotools")
    for name, (m, stats) in rows.items():
        if stats is None or truth is None:
            versus = ""
        else:
            worst = max(abs(a - b) for a, b in zip(stats, truth, strict=True))
            versus = f"{'equal' if worst <= TOL else 'DIFFER'} (largest difference {worst:.1e})"
        print(f"{name:40} {m.cpu:7.2f} {m.wall:7.2f} {m.peak_bytes / 1024**3:9.2f}  {versus}")
    ours = rows["evalstore: ingest + eval, new store"][0]
    for ref in ("faster-coco-eval", "pycocotools"):
        if ref in rows:
            m = rows[ref][0]
            print(
                f"evalstore ingest + eval / {ref}: {ours.cpu / m.cpu:.2f}x CPU, "
                f"{ours.wall / m.wall:.2f}x wall, {ours.peak_bytes / m.peak_bytes:.2f}x peak"
            )
    if "faster-coco-eval" in rows:
        m = rows["faster-coco-eval"][0]
        ok = ours.cpu <= m.cpu and ours.peak_bytes <= m.peak_bytes
        print(f"target (at or below faster-coco-eval's CPU and peak): {_measure.met(ok)}")
    voc = rows["evalstore: eval --protocol voc10-det"][0]
    print(f"target (another protocol at most 2 CPU s): {_measure.met(voc.cpu <= 2.0)}")
    every_voc = " ".join(f"{m.cpu:.2f}" for m in parts["voc"])
    print(f"eval --protocol voc10-det, every run, CPU s: {every_voc}")
    every = " ".join(f"{w.cpu:.2f}" for w in combined)
    print(f"evalstore ingest + eval, every run, CPU s: {every}")
    if truth is not None:
        print(", ".join(f"{n} {v:.4f}" for n, v in zip(NAMES, truth, strict=True)))


if __name__ == "__main__":
    main()
