"""Keypoint ingest benchmark: evalstore vs DuckDB's own CREATE TABLE AS of the same matches.

    python bench/keypoint_ingest.py [--pairs 100,1000,10000] [--matches 2000] [--repeat 3]

For each size, writes PAIRS image pairs x MATCHES matches to a Parquet file (int32 pair ids,
float64 x0, y0, x1, y1 and score; every pair with its own homography, the matches near their
truth with exponential noise and 20 % outliers) and the pairs to a second one (pair_id,
h11..h33, width, height). Then, alternated, REPEAT times, each in a fresh process:
  - reference: ``create table m as select * from read_parquet(matches)`` in DuckDB, into a
    fresh database file;
  - ingest: ``Store.ingest_keypoints(matches, pairs=pairs, run=...)`` into a fresh database
    file (validation, the check that no pair's homography sends a match to infinity, one
    transaction; the truth from a homography is applied by the metrics' SQL, and the
    homographies estimated from the matches are left for the first metric that needs them);
  - first eval: ``evaluate(store, [run], metrics=["reprojection_error"])`` on the database the
    ingest wrote: it makes the two RANSAC estimates per pair (OpenCV's ``findHomography``),
    stores them and computes the metric; a later evaluation reads them.
Each process is timed whole: wall seconds, CPU seconds (user + sys of every thread, from
``getrusage(RUSAGE_CHILDREN)`` around it) and peak memory (max RSS of that process alone, from
``/usr/bin/time -v``). Prints the medians and the ratios ingest / CTAS and first eval / CTAS in
CPU and wall time.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

CHILD = r"""
import sys
kind, matches, pairs, db = sys.argv[1:5]
if kind == "duckdb":
    import duckdb
    con = duckdb.connect(db)
    con.execute("set enable_progress_bar = false")
    # a table function takes no bound parameter; the path is our own temporary file
    con.execute("create table m as select * from read_parquet('" + matches + "')")
    con.close()
elif kind == "ingest":
    from evalstore import Store
    with Store(db) as store:
        store.ingest_keypoints(matches, pairs=pairs, run="bench", git_commit=None)
else:
    from evalstore import Store
    from evalstore.analysis.evaluate import evaluate
    with Store(db) as store:
        evaluate(store, ["bench"], metrics=["reprojection_error"])
"""

KINDS = ("duckdb", "ingest", "eval")  # eval reads the database ingest wrote


def make_files(matches: Path, pairs: Path, n_pairs: int, n_matches: int) -> None:
    rng = np.random.default_rng(0)
    pair = np.repeat(np.arange(n_pairs, dtype=np.int32), n_matches)
    hs = np.tile(np.eye(3), (n_pairs, 1, 1))
    hs[:, :2, :2] += rng.normal(0, 0.05, (n_pairs, 2, 2))
    hs[:, :2, 2] = rng.uniform(-40, 40, (n_pairs, 2))
    hs[:, 2, :2] = rng.normal(0, 1e-4, (n_pairs, 2))
    x0 = rng.uniform(0, 639, pair.size)
    y0 = rng.uniform(0, 479, pair.size)
    h = hs[pair]
    w = h[:, 2, 0] * x0 + h[:, 2, 1] * y0 + h[:, 2, 2]
    gx = (h[:, 0, 0] * x0 + h[:, 0, 1] * y0 + h[:, 0, 2]) / w
    gy = (h[:, 1, 0] * x0 + h[:, 1, 1] * y0 + h[:, 1, 2]) / w
    del h
    noise = rng.exponential(1.5, pair.size)
    angle = rng.uniform(0, 2 * np.pi, pair.size)
    x1, y1 = gx + noise * np.cos(angle), gy + noise * np.sin(angle)
    outlier = rng.random(pair.size) < 0.2
    x1[outlier] = rng.uniform(0, 639, int(outlier.sum()))
    y1[outlier] = rng.uniform(0, 479, int(outlier.sum()))
    columns = {"pair_id": pair, "x0": x0, "y0": y0, "x1": x1, "y1": y1}
    pq.write_table(pa.table({**columns, "score": rng.random(pair.size)}), matches)
    pq.write_table(
        pa.table(
            {
                "pair_id": np.arange(n_pairs, dtype=np.int32),
                **{f"h{i + 1}{j + 1}": hs[:, i, j] for i in range(3) for j in range(3)},
                "width": np.full(n_pairs, 640, dtype=np.int32),
                "height": np.full(n_pairs, 480, dtype=np.int32),
            }
        ),
        pairs,
    )


def cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_once(kind: str, matches: Path, pairs: Path, work: Path) -> dict[str, float]:
    db = work / ("ingest.duckdb" if kind == "eval" else f"{kind}.duckdb")
    report = work / f"{kind}.time"
    cpu0, t0 = cpu_children(), time.perf_counter()
    timed = [sys.executable, "-c", CHILD, kind, str(matches), str(pairs), str(db)]
    subprocess.run(["/usr/bin/time", "-v", "-o", str(report), *timed], check=True)
    wall, cpu = time.perf_counter() - t0, cpu_children() - cpu0
    peak_kib = next(
        int(line.rsplit(":", 1)[1])
        for line in report.read_text().splitlines()
        if "Maximum resident set size" in line
    )
    if kind != "ingest":  # the first eval reads the ingest's database, then it goes
        db.unlink(missing_ok=True)
    return {"wall": wall, "cpu": cpu, "peak_mib": peak_kib / 1024}


def measure(n_pairs: int, n_matches: int, repeat: int) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        matches, pairs = work / "matches.parquet", work / "pairs.parquet"
        make_files(matches, pairs, n_pairs, n_matches)
        got: dict[str, list[dict[str, float]]] = {k: [] for k in KINDS}
        for _ in range(repeat):
            for kind in KINDS:
                got[kind].append(run_once(kind, matches, pairs, work))
    return {
        kind: {key: statistics.median(r[key] for r in runs) for key in runs[0]}
        for kind, runs in got.items()
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--pairs", default="100,1000,10000", help="comma-separated pair counts")
    ap.add_argument("--matches", type=int, default=2000, help="matches per pair")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(
        f"median of {args.repeat}, whole processes; CPU = user + sys of all threads; "
        "peak = max RSS of the process"
    )
    print(
        f"{'pairs':>6} {'matches':>11} | {'ingest CPU s':>12} {'wall s':>7} {'peak MiB':>8} | "
        f"{'CTAS CPU s':>10} {'wall s':>6} {'peak MiB':>8} | {'ratio CPU':>9} {'wall':>6} | "
        f"{'1st eval CPU s':>14} {'wall s':>7} {'peak MiB':>8} | {'ratio CPU':>9}"
    )
    for n_pairs in (int(p) for p in args.pairs.split(",")):
        r = measure(n_pairs, args.matches, args.repeat)
        ours, ref, ev = r["ingest"], r["duckdb"], r["eval"]
        print(
            f"{n_pairs:>6,} {n_pairs * args.matches:>11,} | {ours['cpu']:12.2f} "
            f"{ours['wall']:7.2f} {ours['peak_mib']:8.0f} | {ref['cpu']:10.2f} {ref['wall']:6.2f} "
            f"{ref['peak_mib']:8.0f} | {ours['cpu'] / ref['cpu']:8.2f}x "
            f"{ours['wall'] / ref['wall']:5.2f}x | {ev['cpu']:14.2f} {ev['wall']:7.2f} "
            f"{ev['peak_mib']:8.0f} | {ev['cpu'] / ref['cpu']:8.2f}x",
            flush=True,
        )


if __name__ == "__main__":
    main()
