"""DuckDB vs Spark (local mode) on the same metric SQL and the same data.

    python bench/spark.py [--lists 10000] [--items 1000] [--repeat 3] [--master local[*]]

One retrieval run of ``--lists`` x ``--items`` rows (default 10,000 x 1,000 = 10 M rows; the
recipe of ``bench/ranking.py``'s ``lists`` case: 5 % positives and at least one per list,
scores N(0, 1) + 1 for positives, rounded to ``--decimals`` if given so that many scores
tie) is ingested into a DuckDB store and exported to Parquet with ``export_runs``. Then ``ap`` is
computed per list

- by DuckDB: the ``metrics/ap`` query over the store's table (``fetchall``);
- by Spark: ``compute_per_list`` (the same SQL transpiled by sqlglot) over the export, with the
  views registered once before timing (an export has no list index: Spark's views compute it
  from the rows, with window sorts, in every query);

each the best of ``--repeat`` runs (Spark's first, cold run is printed too). Both use every
core of the machine. The two results must agree to 1e-9 (mean AP and every list).
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from evalstore import Store
from evalstore.db import queries
from evalstore.scale.export import export_runs

TOL = 1e-9


def best_of(repeat: int, fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """(best, first) wall time of ``repeat`` calls, and the last call's result."""
    times, out = [], None
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), times[0], out


def make_run(store: Store, n_lists: int, per: int, decimals: int | None) -> int:
    rng = np.random.default_rng(2)
    n = n_lists * per
    pos = rng.random(n) < 0.05
    pos[np.arange(n_lists) * per + rng.integers(0, per, n_lists)] = True  # >= 1 per list
    score = rng.standard_normal(n) + pos.astype(np.float64)
    if decimals is not None:
        score = np.round(score, decimals)
    result = store.ingest(
        {
            "group_id": np.repeat(np.arange(n_lists, dtype=np.int64), per),
            "item_id": np.tile(np.arange(per, dtype=np.int64), n_lists),
            "score": score,
            "label": np.where(pos, 1, -1).astype(np.int8),
        },
        task="retrieval",
        run="bench/lists",
        git_commit=None,
    )
    store.con.execute("checkpoint")
    return result.run_id


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--lists", type=int, default=10_000)
    ap.add_argument("--items", type=int, default=1_000, help="items per list")
    ap.add_argument(
        "--decimals", type=int, default=-1, help="round scores (ties); -1 = none (the default)"
    )
    ap.add_argument("--repeat", type=int, default=3, help="best of N runs (default 3)")
    ap.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    ap.add_argument("--driver-memory", default="4g", help="spark.driver.memory (default 4g)")
    ap.add_argument(
        "--conf", action="append", default=[], help="more Spark settings KEY=VALUE (repeatable)"
    )
    ap.add_argument("--workdir", type=Path, default=None, help="where the data goes")
    args = ap.parse_args()
    decimals = None if args.decimals < 0 else args.decimals
    rows = args.lists * args.items

    from evalstore.scale.spark import compute_per_list, register_source, spark_session

    print(
        f"{args.lists:,} lists x {args.items:,} items = {rows:,} rows, one run; "
        f"{os.cpu_count()} cores, {platform.machine()}; best of {args.repeat}"
        + (f"; Spark settings {args.conf}" if args.conf else "")
    )
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        work = Path(tmp)
        with Store(work / "bench.duckdb") as store:
            t0 = time.perf_counter()
            run_id = make_run(store, args.lists, args.items, decimals)
            print(f"  ingest (not compared)            {time.perf_counter() - t0:8.2f} s")
            t0 = time.perf_counter()
            export_runs(store, work / "export", runs=[run_id])
            export_s = time.perf_counter() - t0
            size = sum(p.stat().st_size for p in (work / "export").rglob("*.parquet"))
            print(f"  export_runs (not compared)       {export_s:8.2f} s  ({size / 2**20:.0f} MiB)")

            text = queries.load("metrics/ap").text
            params = {"runs": [run_id], "task": "retrieval", "ties": "grouped"}
            bound = queries.bind(text, params)
            t_duck, _, duck_rows = best_of(
                args.repeat, lambda: store.con.execute(text, bound).fetchall()
            )

        t0 = time.perf_counter()
        conf = dict(item.split("=", 1) for item in args.conf)
        spark = spark_session(args.master, **{"spark.driver.memory": args.driver_memory, **conf})
        spark.sparkContext.setLogLevel("ERROR")
        register_source(spark, work / "export")
        start_s = time.perf_counter() - t0
        t_spark, t_cold, frame = best_of(
            args.repeat,
            lambda: compute_per_list(spark, work / "export", "ap", "retrieval", [run_id], params),
        )
        spark.stop()

    duck = np.full(args.lists, np.nan)
    for _, gid, value in duck_rows:
        duck[int(gid)] = value
    spk = np.full(args.lists, np.nan)
    for gid, value in zip(frame["group_id"], frame["value"], strict=True):
        spk[int(gid)] = value
    diff = float(np.nanmax(np.abs(duck - spk)))
    agree = diff <= TOL and abs(np.mean(duck) - np.mean(spk)) <= TOL
    print(f"  Spark session start + views      {start_s:8.2f} s  (not compared)")
    print(f"  {'':32} {'seconds':>8}")
    print(f"  {'DuckDB metrics/ap':32} {t_duck:8.2f}")
    print(f"  {'Spark ' + args.master + ' (best)':32} {t_spark:8.2f}")
    print(f"  {'Spark ' + args.master + ' (cold, 1st)':32} {t_cold:8.2f}")
    print(f"  Spark / DuckDB = {t_spark / t_duck:.1f}x (cold: {t_cold / t_duck:.1f}x)")
    print(f"  mean AP DuckDB = {np.mean(duck):.15f}")
    print(f"  mean AP Spark  = {np.mean(spk):.15f}")
    verdict = "yes" if agree else "NO"
    print(f"  agree to {TOL:g}: {verdict} (largest per-list difference {diff:.1e})")


if __name__ == "__main__":
    main()
