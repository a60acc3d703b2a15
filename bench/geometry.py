"""Geometric matching benchmark: precision@sigma in SQL vs the NumPy core, same data, one run.

    python bench/geometry.py [--pairs 1000] [--matches 2000] [--repeat 5]

Builds a keypoint run of PAIRS image pairs x MATCHES matches, each pair with its own
homography, then times precision@sigma for sigma = 3, 6, 9:
  - SQL: sql/metrics/precision_at_sigma.sql over the stored run (all pairs, fetched; the truth
    is each pair's stored homography applied to the match, sql/lib/match_truth.sql);
  - NumPy: evalstore.core.matching.precision_at_sigma on the same arrays, already in memory
    (integer pair codes, ground truth precomputed).
Prints the best of REPEAT for each and the ratio SQL / NumPy, and checks both agree.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from evalstore import Store
from evalstore.core import geometry, matching
from evalstore.db import queries

SIGMAS = [3.0, 6.0, 9.0]


def build(store: Store, n_pairs: int, n_matches: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    pair = np.repeat(np.arange(n_pairs), n_matches)
    x0 = rng.uniform(0, 640, pair.size)
    y0 = rng.uniform(0, 480, pair.size)
    hs = np.tile(np.eye(3), (n_pairs, 1, 1))
    hs[:, 0, 2] = rng.uniform(-20, 20, n_pairs)
    hs[:, 1, 2] = rng.uniform(-20, 20, n_pairs)
    hs[:, 2, :2] = rng.normal(0, 1e-5, (n_pairs, 2))
    gx, gy = geometry.transfer(hs[pair], x0, y0)
    noise = rng.exponential(4.0, pair.size)
    angle = rng.uniform(0, 2 * np.pi, pair.size)
    x1, y1 = gx + noise * np.cos(angle), gy + noise * np.sin(angle)
    pairs = pl.DataFrame(
        {
            "pair_id": np.arange(n_pairs),
            **{f"h{i + 1}{j + 1}": hs[:, i, j] for i in range(3) for j in range(3)},
            "width": np.full(n_pairs, 640),
            "height": np.full(n_pairs, 480),
        }
    )
    store.ingest_keypoints(
        {"pair_id": pair, "x0": x0, "y0": y0, "x1": x1, "y1": y1},
        run="bench",
        pairs=pairs,
        git_commit=None,
    )
    return {"pair": pair, "x1": x1, "y1": y1, "gx": gx, "gy": gy}


def best(fn, repeat: int) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--matches", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "bench.duckdb") as store:
        t0 = time.perf_counter()
        arrays = build(store, args.pairs, args.matches)
        setup = time.perf_counter() - t0
        query = queries.load("metrics/precision_at_sigma")
        params = queries.bind(query.text, {"runs": [1], "sigmas": SIGMAS})
        sql_s, rows = best(lambda: store.con.execute(query.text, params).fetchall(), args.repeat)
        np_s, (_, values) = best(
            lambda: matching.precision_at_sigma(
                arrays["pair"], arrays["x1"], arrays["y1"], arrays["gx"], arrays["gy"], SIGMAS
            ),
            args.repeat,
        )
    sql_mean = {s: np.mean([r[3] for r in rows if r[2] == s]) for s in SIGMAS}  # type: ignore[union-attr]
    np_mean = dict(zip(SIGMAS, np.asarray(values).mean(axis=0), strict=True))
    agree = all(abs(sql_mean[s] - np_mean[s]) <= 1e-12 for s in SIGMAS)
    print(f"{args.pairs:,} pairs x {args.matches:,} matches; setup (data and ingest) {setup:.1f} s")
    print(
        f"precision@sigma for sigma = {SIGMAS}: " + ", ".join(f"{sql_mean[s]:.6f}" for s in SIGMAS)
    )
    print(f"  SQL    {sql_s:8.3f} s")
    print(f"  NumPy  {np_s:8.3f} s")
    print(f"  ratio SQL / NumPy: {sql_s / np_s:.2f}x   values agree: {'yes' if agree else 'NO'}")


if __name__ == "__main__":
    main()
