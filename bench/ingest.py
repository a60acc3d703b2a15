"""Ingest benchmark: evalstore vs DuckDB's own CREATE TABLE AS over the same Parquet file.

    python bench/ingest.py [--rows 10000000] [--repeat 3]

Writes a Parquet file (int32 group and item ids, float32 scores, int8 labels), then, each in a
fresh process and into a fresh database file, times
  - reference: ``create table t as select * from read_parquet(...)`` in DuckDB;
  - evalstore: ``Store.ingest(path, task="retrieval", run=...)`` (validation, order column,
    duplicate check, one transaction).
Prints the best time of each, their ratio, peak memory (max RSS of the process) and the size
of each database file.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

CHILD = r"""
import json, resource, sys, time
kind, parquet, db = sys.argv[1:4]
if kind == "duckdb":
    import duckdb
    t0 = time.perf_counter()
    con = duckdb.connect(db)
    con.execute("set enable_progress_bar = false")
    # a table function takes no bound parameter; the path is our own temporary file
    con.execute("create table t as select * from read_parquet('" + parquet + "')")
    con.close()
else:
    from evalstore import Store
    t0 = time.perf_counter()
    with Store(db) as store:
        store.ingest(parquet, task="retrieval", run="bench", git_commit=None)
elapsed = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"seconds": elapsed, "peak_bytes": peak}))
"""


def make_parquet(path: Path, rows: int, lists: int) -> None:
    rng = np.random.default_rng(0)
    per = rows // lists
    table = pa.table(
        {
            "group_id": np.repeat(np.arange(lists, dtype=np.int32), per),
            "item_id": np.tile(rng.permutation(per).astype(np.int32), lists),
            "score": rng.standard_normal(per * lists).astype(np.float32),
            "label": np.where(rng.random(per * lists) < 0.05, 1, -1).astype(np.int8),
        }
    )
    pq.write_table(table, path)


def measure(kind: str, parquet: Path, work: Path, repeat: int) -> dict[str, float]:
    best: dict[str, float] | None = None
    for i in range(repeat):
        db = work / f"{kind}-{i}.duckdb"
        out = subprocess.run(
            [sys.executable, "-c", CHILD, kind, str(parquet), str(db)],
            check=True,
            capture_output=True,
            text=True,
        )
        got = json.loads(out.stdout.strip().splitlines()[-1])
        got["db_bytes"] = db.stat().st_size
        if best is None or got["seconds"] < best["seconds"]:
            best = got
        db.unlink()
    assert best is not None
    return best


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--lists", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        parquet = work / "scores.parquet"
        make_parquet(parquet, args.rows, args.lists)
        ref = measure("duckdb", parquet, work, args.repeat)
        ours = measure("evalstore", parquet, work, args.repeat)
    mib = 1024 * 1024
    print(f"rows: {args.rows:,} in {args.lists:,} lists; best of {args.repeat}")
    print(f"{'':10} {'seconds':>8} {'peak MiB':>9} {'db MiB':>8}")
    for name, r in (("duckdb", ref), ("evalstore", ours)):
        print(
            f"{name:10} {r['seconds']:8.2f} {r['peak_bytes'] / mib:9.0f} {r['db_bytes'] / mib:8.1f}"
        )
    print(f"time ratio evalstore/duckdb: {ours['seconds'] / ref['seconds']:.2f}x")
    print(f"size ratio evalstore/duckdb: {ours['db_bytes'] / ref['db_bytes']:.2f}x")


if __name__ == "__main__":
    main()
