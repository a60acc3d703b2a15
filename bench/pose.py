"""Relative pose AUC: evalstore's estimates and ``pose_auc`` vs SuperGlue's evaluation loop.

    python bench/pose.py [--pairs 1500] [--matches 2000] [--repeat 3]
                         [--noise 0.5] [--outliers 0.2]

Makes PAIRS synthetic two-view scenes of MATCHES matches each (MegaDepth-1500's size by
default; ``evalstore.demo.pose_scenes``: known K0, K1 and T_0to1, pixel noise NOISE, a share
OUTLIERS of outliers), writes the matches and the pairs with their camera columns to Parquet,
and ingests them once into a store (a process of its own, timed and reported apart). Then,
REPEAT times each, alternated, each in a fresh process under ``/usr/bin/time -v``:

  - evalstore: ``evaluate(store, [RUN], metrics=["pose_auc"])`` on a copy of the store as
    ingested (no estimate stored yet): the relative pose of every pair estimated from its
    stored matches (SuperGlue's setting: 1 px, confidence 0.99999), stored, and the AUC at 5,
    10 and 20 degrees computed from the stored errors;
  - reference: SuperGlue's loop (magicleap/SuperGluePretrainedNetwork @ ddcf11f42e7e,
    ``match_pairs.py`` with ``--eval``, its functions from ``models/utils.py``) as
    tests/conformance/reference_pose.py transcribes it, run by :data:`REFERENCE`: the same
    Parquet files read with pyarrow, then for each pair ``estimate_pose`` +
    ``compute_pose_error``, ``max(err_t, err_R)``, then ``pose_auc``.

Prints, for each, the median CPU seconds (user + sys, every thread) and wall seconds of the
whole process and of the work alone (from after the imports, as the process measures it),
the peak memory, the ratios evalstore / reference, and the two sets of AUCs (which must agree
to 1e-9: the same OpenCV calls on the same matches in the same order).
Target (issue 36, point 7): evalstore at most the reference's CPU.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _measure
from _measure import MIB, Measured, met

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the checkout's evalstore, before an installed one

from evalstore.demo.pose_scenes import make_scenes, observe  # noqa: E402

RUN = "bench"
THRESHOLDS = (5.0, 10.0, 20.0)
TOL = 1e-9

INGEST = r"""
import json, sys, time
from evalstore import Store
matches, pairs, db = sys.argv[1:4]
c0, w0 = time.process_time(), time.perf_counter()
with Store(db) as store:
    store.ingest_keypoints(matches, pairs=pairs, run="bench", git_commit=None)
print(json.dumps({"cpu": time.process_time() - c0, "wall": time.perf_counter() - w0}))
"""

EVALSTORE = r"""
import json, sys, time
from evalstore import Store
from evalstore.analysis.evaluate import evaluate
db, = sys.argv[1:2]
c0, w0 = time.process_time(), time.perf_counter()
with Store(db) as store:
    values = evaluate(store, ["bench"], metrics=["pose_auc"])
cpu, wall = time.process_time() - c0, time.perf_counter() - w0
rows = [r for r in values.iter_rows(named=True) if r["slice"] == ""]
print(json.dumps({"cpu": cpu, "wall": wall,
                  "values": [[r["params"], r["value"]] for r in rows]}, default=str))
"""

REFERENCE = r"""
import json, sys, time
import numpy as np
import pyarrow.parquet as pq

# SuperGlue's functions as tests/conformance/reference_pose.py transcribes them (it imports
# cv2 and NumPy, as SuperGlue's models/utils.py does)
from tests.conformance.reference_pose import sg_match_pairs_pose, sg_pose_auc

matches_path, pairs_path = sys.argv[1:3]
c0, w0 = time.process_time(), time.perf_counter()
m = pq.read_table(matches_path, columns=["pair_id", "x0", "y0", "x1", "y1"])
p = pq.read_table(pairs_path)
kpts0 = np.column_stack([m["x0"].to_numpy(), m["y0"].to_numpy()])
kpts1 = np.column_stack([m["x1"].to_numpy(), m["y1"].to_numpy()])
ids = m["pair_id"].to_numpy()
# the matches of a pair are contiguous, in the file's order (SuperGlue's per-pair .npz)
starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
ends = np.r_[starts[1:], len(ids)]
cols = {name: p[name].to_numpy() for name in p.column_names}
row_of = {pid: i for i, pid in enumerate(cols["pair_id"])}

def matrix(prefix, i, shape):
    return np.array([[cols[f"{prefix}_{r}{c}"][i] for c in range(1, shape[1] + 1)]
                     for r in range(1, shape[0] + 1)])

pose_errors = []
for start, end in zip(starts, ends):
    i = row_of[ids[start]]
    K0, K1 = matrix("k0", i, (3, 3)), matrix("k1", i, (3, 3))
    T_0to1 = np.vstack([matrix("t", i, (3, 4)), [0.0, 0.0, 0.0, 1.0]])
    mkpts0, mkpts1 = kpts0[start:end], kpts1[start:end]
    # match_pairs.py, the --eval block: the pose, then its error in the collated table
    err_t, err_R = sg_match_pairs_pose(mkpts0, mkpts1, T_0to1, K0, K1)
    pose_errors.append(np.maximum(err_t, err_R))
thresholds = [5, 10, 20]
aucs = sg_pose_auc(pose_errors, thresholds)
print(json.dumps({"cpu": time.process_time() - c0, "wall": time.perf_counter() - w0,
                  "values": [float(a) for a in aucs]}))
"""
"""``python -c REFERENCE MATCHES PAIRS``: SuperGlue's evaluation loop over the Parquet files;
prints the CPU and wall seconds from after the imports and the three AUCs, as JSON."""


def write_inputs(folder: Path, n_pairs: int, n_matches: int, noise: float, outliers: float) -> None:
    scenes = make_scenes(n_pairs, seed=0, n_points=n_matches)
    matches, pairs = observe(scenes, noise_px=noise, outlier_ratio=outliers, seed=0)
    pl.DataFrame(matches).write_parquet(folder / "matches.parquet")
    pl.DataFrame(pairs).write_parquet(folder / "pairs.parquet")


def auc_values(found: list[list[Any]]) -> list[float]:
    """The AUCs of evalstore's rows (``[params, value]``, params as JSON text) by the sweep
    value (5, 10, 20 degrees), whatever the sweep parameter is called."""
    by_bound = {}
    for params, value in found:
        given = json.loads(params) if isinstance(params, str) else params or {}
        bounds = [
            float(v)
            for v in given.values()
            if isinstance(v, int | float) and float(v) in THRESHOLDS
        ]
        if len(bounds) == 1:
            by_bound[bounds[0]] = float(value)
    return [by_bound.get(t, float("nan")) for t in THRESHOLDS]


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--pairs", type=int, default=1500)
    ap.add_argument("--matches", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--noise", type=float, default=0.5)
    ap.add_argument("--outliers", type=float, default=0.2)
    args = ap.parse_args()
    env = {"PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_inputs(folder, args.pairs, args.matches, args.noise, args.outliers)
        matches, pairs = folder / "matches.parquet", folder / "pairs.parquet"
        ingested = folder / "ingested.duckdb"
        ingest = _measure.python(INGEST, matches, pairs, ingested, env=env)
        ours: list[Measured] = []
        theirs: list[Measured] = []
        for i in range(args.repeat):
            db = folder / f"eval{i}.duckdb"
            shutil.copyfile(ingested, db)
            ours.append(_measure.python(EVALSTORE, db, env=env))
            db.unlink()
            theirs.append(_measure.python(REFERENCE, matches, pairs, env=env))
    inner_ours = [json.loads(m.last_line()) for m in ours]
    inner_theirs = [json.loads(m.last_line()) for m in theirs]
    ours_values = auc_values(inner_ours[-1]["values"])
    theirs_values = [float(v) for v in inner_theirs[-1]["values"]]
    agree = all(abs(a - b) <= TOL for a, b in zip(ours_values, theirs_values, strict=True))
    o, t = _measure.median(ours), _measure.median(theirs)
    o_cpu = statistics.median(g["cpu"] for g in inner_ours)
    t_cpu = statistics.median(g["cpu"] for g in inner_theirs)
    o_wall = statistics.median(g["wall"] for g in inner_ours)
    t_wall = statistics.median(g["wall"] for g in inner_theirs)
    ingest_inner = json.loads(ingest.last_line())
    print(
        f"{args.pairs:,} pairs x {args.matches:,} matches (noise {args.noise} px, outliers "
        f"{args.outliers:.0%}); median of {args.repeat}; {_measure.load_note()}"
    )
    print(
        f"ingest (once, not counted): {ingest.cpu:.2f} CPU s, {ingest.wall:.2f} s wall whole "
        f"process; {ingest_inner['cpu']:.2f} CPU s the ingest alone"
    )
    heads = ("CPU s", "wall s", "work CPU s", "work wall s", "peak MiB")
    print(f"{'':44} {heads[0]:>8} {heads[1]:>8} {heads[2]:>11} {heads[3]:>12} {heads[4]:>9}")
    for name, whole, cpu, wall in (
        ("evalstore: evaluate -m pose_auc (new estimates)", o, o_cpu, o_wall),
        ("reference: SuperGlue's loop", t, t_cpu, t_wall),
    ):
        print(
            f"{name:44} {whole.cpu:8.2f} {whole.wall:8.2f} {cpu:11.2f} {wall:12.2f} "
            f"{whole.peak_bytes / MIB:9.0f}"
        )
    print(
        f"evalstore / reference: {o.cpu / t.cpu:.2f}x CPU, {o.wall / t.wall:.2f}x wall, "
        f"{o.peak_bytes / t.peak_bytes:.2f}x peak (whole processes); the work alone "
        f"{o_cpu / t_cpu:.2f}x CPU, {o_wall / t_wall:.2f}x wall"
    )
    print(
        "pose_auc@5/10/20: evalstore "
        + ", ".join(f"{v:.6f}" for v in ours_values)
        + "; reference "
        + ", ".join(f"{v:.6f}" for v in theirs_values)
    )
    print(f"agree to {TOL:g}: {'yes' if agree else 'NO'}")
    print(f"target evalstore CPU <= the reference's (whole processes): {met(o.cpu <= t.cpu)}")


if __name__ == "__main__":
    main()
