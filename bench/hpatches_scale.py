"""HPatches retrieval scale: 10,000 queries x 20,000 items (200 million rows) end to end.

    python bench/hpatches_scale.py [--queries 10000] [--items 20000] [--memory-limit 10GB]

Writes the lists to Parquet in chunks (5 positives per query, ignored same-sequence items,
distractors), then runs, each in a fresh process timed with its peak memory (max RSS):
``evalstore ingest`` and ``evalstore eval`` (map over the query lists, DuckDB's memory_limit
set, spilling to <db>.tmp). Prints rows, times, peak memory and the database size.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

CHILD = r"""
import json, resource, sys, time
from evalstore import Store, evaluate
kind, db, parquet, limit = sys.argv[1:5]
t0 = time.perf_counter()
with Store(db, memory_limit=limit) as store:
    if kind == "ingest":
        store.ingest(parquet, task="retrieval", run="hpatches/scale", git_commit=None)
        out = {}
    else:
        frame = evaluate(store, ["hpatches/scale"], metrics=["ap"], recompute=True)
        out = {"map": frame["value"][0], "n_lists": int(frame["n_lists"][0])}
out["seconds"] = time.perf_counter() - t0
out["peak_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps(out))
"""


def write_lists(path: Path, queries: int, items: int, chunk: int = 250) -> int:
    rng = np.random.default_rng(0)
    schema = pa.schema(
        [
            ("group_id", pa.int32()),
            ("item_id", pa.int32()),
            ("score", pa.float32()),
            ("label", pa.int8()),
        ]
    )
    rows = 0
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, queries, chunk):
            q = min(chunk, queries - start)
            group = np.repeat(np.arange(start, start + q, dtype=np.int32), items)
            item = np.tile(np.arange(items, dtype=np.int32), q)
            label = np.full(group.size, -1, dtype=np.int8)
            slot = rng.integers(0, items, size=(q, 5))  # 5 positives per query
            label[(np.arange(q)[:, None] * items + slot).ravel()] = 1
            ignored = rng.random(group.size) < 0.02  # the query's own sequence
            label[ignored & (label != 1)] = 0
            score = (rng.standard_normal(group.size) + 2.0 * (label == 1)).astype(np.float32)
            writer.write_table(
                pa.table(
                    {"group_id": group, "item_id": item, "score": score, "label": label},
                    schema=schema,
                )
            )
            rows += group.size
    return rows


def run(kind: str, db: Path, parquet: Path, limit: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, kind, str(db), str(parquet), limit],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--items", type=int, default=20_000)
    ap.add_argument("--memory-limit", default="10GB")
    ap.add_argument("--workdir", default=None, help="where to put the data (default: a temp dir)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        work = Path(tmp)
        parquet = work / "lists.parquet"
        t0 = time.perf_counter()
        rows = write_lists(parquet, args.queries, args.items)
        made = time.perf_counter() - t0
        db = work / "scale.duckdb"
        ingest = run("ingest", db, parquet, args.memory_limit)
        size = db.stat().st_size
        ev = run("eval", db, parquet, args.memory_limit)
    gib = 1024**3
    print(
        f"rows: {rows:,} ({args.queries:,} queries x {args.items:,} items); "
        f"data written in {made:.0f} s"
    )
    print(
        f"ingest: {ingest['seconds']:.0f} s, peak {ingest['peak_bytes'] / gib:.1f} GiB, "
        f"database {size / gib:.1f} GiB"
    )
    print(
        f"eval (map): {ev['seconds']:.0f} s, peak {ev['peak_bytes'] / gib:.1f} GiB, "
        f"memory_limit {args.memory_limit}"
    )
    print(f"map = {ev['map']:.6f} over {ev['n_lists']:,} queries")
    print(f"cores: {os.cpu_count()}")


if __name__ == "__main__":
    main()
