"""Ingest benchmark: evalstore vs DuckDB's own CREATE TABLE AS over the same Parquet file.

    python bench/ingest.py [--rows 10000000] [--lists 10000] [--repeat 3]

Writes a Parquet file (int32 group and item ids, float32 scores N(0, 1), int8 labels, 5 %
positives), then, each in a fresh process and into a fresh database file, the two alternated,
measures under ``/usr/bin/time -v``
  - reference: ``create table t as select * from read_parquet(...)`` in DuckDB;
  - evalstore: ``Store.ingest(path, task="retrieval", run=...)`` (validation, order column,
    duplicate check, list index, one transaction).
the CPU seconds (user + sys, all threads) and wall seconds of the ingest alone (from the connect
on, as the process times itself after its imports) and of the whole process (start-up and
imports included), and the process's peak memory (its maximum resident set size), the least of
``--repeat`` runs each. Prints them, the ratios and the size of each database file.
Targets: at most 1.5x the reference in the ingest's wall time and in database size.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _measure
from _measure import INGEST_CHILD, MIB, Measured, met

TARGET = 1.5


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


def measure(
    parquet: Path, work: Path, repeat: int
) -> dict[str, tuple[Measured, tuple[float, float], int]]:
    """Per kind: the least CPU, wall and peak of its processes, the least CPU and wall of the
    work alone (after the imports), and its database size."""
    got: dict[str, list[Measured]] = {"duckdb": [], "evalstore": []}
    size: dict[str, int] = {}
    for i in range(repeat):
        for kind, runs in got.items():
            db = work / f"{kind}-{i}.duckdb"
            runs.append(_measure.python(INGEST_CHILD, kind, parquet, db, "retrieval"))
            size[kind] = db.stat().st_size
            db.unlink()
    return {
        kind: (_measure.best(runs), _measure.inner(runs), size[kind]) for kind, runs in got.items()
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--lists", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=None, help="where the files go")
    args = ap.parse_args()
    print(_measure.load_note())
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        work = Path(tmp)
        parquet = work / "scores.parquet"
        make_parquet(parquet, args.rows, args.lists)
        got = measure(parquet, work, args.repeat)
    (ref, ref_in, ref_size), (ours, our_in, our_size) = got["duckdb"], got["evalstore"]
    print(f"rows: {args.rows:,} in {args.lists:,} lists; best of {args.repeat}, alternated")
    print(f"{'':10} {'ingest alone':>15} {'whole process':>15}")
    print(
        f"{'':10} {'CPU s':>7} {'wall s':>7} {'CPU s':>7} {'wall s':>7} {'peak MiB':>9} "
        f"{'db MiB':>8}"
    )
    for name, m, (cpu, wall), size in (
        ("duckdb", ref, ref_in, ref_size),
        ("evalstore", ours, our_in, our_size),
    ):
        print(
            f"{name:10} {cpu:7.2f} {wall:7.2f} {m.cpu:7.2f} {m.wall:7.2f} "
            f"{m.peak_bytes / MIB:9.0f} {size / MIB:8.1f}"
        )
    wall, cpu = our_in[1] / ref_in[1], our_in[0] / ref_in[0]
    size_ratio = our_size / ref_size
    print(
        f"time ratio evalstore/duckdb, ingest alone: {wall:.2f}x wall "
        f"(target <= {TARGET}x: {met(wall <= TARGET)}), {cpu:.2f}x CPU"
    )
    print(
        f"time ratio evalstore/duckdb, whole process: {ours.wall / ref.wall:.2f}x wall, "
        f"{ours.cpu / ref.cpu:.2f}x CPU"
    )
    print(f"peak ratio evalstore/duckdb: {ours.peak_bytes / ref.peak_bytes:.2f}x")
    print(
        f"size ratio evalstore/duckdb: {size_ratio:.2f}x "
        f"(target <= {TARGET}x: {met(size_ratio <= TARGET)})"
    )
    print(_measure.load_note())


if __name__ == "__main__":
    main()
