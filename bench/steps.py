"""Evaluations at training steps: is storing them linear in the rows?

    python bench/steps.py [--steps 100] [--rows 100000] [--per-list 1000] [--repeat 1]

Writes one Parquet file of ``--rows`` rows and one of ``--steps`` x ``--rows`` rows with
``bench/ingest.py``'s generator (int32 group ids, int32 item ids, float32 scores N(0, 1), int8
labels, 5 % positives; ``--per-list`` rows per list), then, each into a fresh store holding
one run:
  - steps: ``Store.log_lists`` of the small file at each of ``--steps`` steps of the run;
  - one ingest: ``Store.ingest`` of the large file (the same number of rows) as a run;
and prints the CPU seconds (this process, all threads) of each, per row, and their ratio
(steps / one ingest: 1 = storage stays linear; above 1, the fixed cost of each step), and
the CPU of the first and the last tenth of the steps (equal: a step costs the same in a
store holding many), and the floor DuckDB itself sets: its CPU for ``--steps`` transactions
each inserting the small file, over one inserting the large file (the databases' close
counted); and the same with the inserts committed 10 at a time (what buffering steps into
fewer transactions could reach). The least of ``--repeat`` measures of each.

Target (issue 34, point 3): 100 steps of 1e5 rows at the rate per row of one ingest of 1e7.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest import make_file

from evalstore import Store


def _fresh(path: Path, seed_file: Path) -> Store:
    """A new store at ``path`` with the run ``bench/run`` (the parent of the steps)."""
    store = Store(path)
    store.ingest(seed_file, task="retrieval", run="bench/run", git_commit=None)
    return store


def measure(work: Path, steps: int, rows: int, per_list: int, repeat: int) -> dict[str, float]:
    small, large, seed = work / "step.parquet", work / "all.parquet", work / "seed.parquet"
    make_file(small, rows, max(1, rows // per_list), "int", "float32")
    make_file(large, rows * steps, max(1, rows * steps // per_list), "int", "float32")
    make_file(seed, 1000, 1, "int", "float32")
    best = {"steps": float("inf"), "one ingest": float("inf")}
    tenth = max(1, steps // 10)
    ends = {"first": float("inf"), "last": float("inf")}
    for i in range(repeat):
        for kind in ("steps", "one ingest"):
            path = work / f"{kind.replace(' ', '_')}-{i}.duckdb"
            with _fresh(path, seed) as store:
                c0 = time.process_time()
                if kind == "steps":
                    marks = []
                    for step in range(steps):
                        marks.append(time.process_time())
                        store.log_lists("bench/run", small, task="retrieval", step=step)
                    marks.append(time.process_time())
                    ends["first"] = min(ends["first"], marks[tenth] - marks[0])
                    ends["last"] = min(ends["last"], marks[-1] - marks[-1 - tenth])
                else:
                    store.ingest(large, task="retrieval", run="bench/all", git_commit=None)
                best[kind] = min(best[kind], time.process_time() - c0)
            path.unlink()
    return {**best, **{f"{k} tenth": v for k, v in ends.items()}}


def duckdb_floor(work: Path, steps: int, repeat: int, per_commit: int = 1) -> float:
    """DuckDB alone, the same files: the CPU of ``steps`` inserts of the small file, committed
    every ``per_commit`` inserts, over that of one transaction inserting the large file; the
    close of each database (its checkpoint) counted in both. An insert smaller than a row
    group (122,880 rows) goes through DuckDB's write-ahead log; a large one is written as
    compressed row groups: no per-step store can beat this ratio."""
    import duckdb

    small, large = str(work / "step.parquet"), str(work / "all.parquet")
    best = {"small": float("inf"), "large": float("inf")}
    for i in range(repeat):
        for kind in best:
            path = work / f"floor-{kind}-{i}.duckdb"
            con = duckdb.connect(str(path))
            con.execute("create table t as select * from read_parquet($f) limit 0", {"f": small})
            c0 = time.process_time()
            inserts = steps if kind == "small" else 1
            for first in range(0, inserts, per_commit):
                con.execute("begin")
                for _ in range(min(per_commit, inserts - first)):
                    con.execute("insert into t select * from read_parquet($f)",
                                {"f": small if kind == "small" else large})  # fmt: skip
                con.execute("commit")
            con.close()
            best[kind] = min(best[kind], time.process_time() - c0)
            path.unlink()
    return best["small"] / best["large"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--rows", type=int, default=100_000, help="rows per step")
    parser.add_argument("--per-list", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    total = args.steps * args.rows
    with tempfile.TemporaryDirectory(dir=".") as tmp:
        best = measure(Path(tmp), args.steps, args.rows, args.per_list, args.repeat)
        floor = duckdb_floor(Path(tmp), args.steps, args.repeat)
        batched = duckdb_floor(Path(tmp), args.steps, args.repeat, per_commit=10)
    print(f"{args.steps} steps of {args.rows:,} rows vs one ingest of {total:,} rows")
    for kind in ("steps", "one ingest"):
        cpu = best[kind]
        print(f"  {kind:<11} {cpu:8.2f} CPU s   {cpu / total * 1e9:8.1f} CPU ns per row")
    print(f"  ratio (steps / one ingest): {best['steps'] / best['one ingest']:.2f}")
    print(f"  DuckDB alone, {args.steps} insert+commit of a step's file / one of all: {floor:.2f}")
    print(f"  DuckDB alone, the same inserts committed 10 at a time / one of all: {batched:.2f}")
    first, last = best["first tenth"], best["last tenth"]
    print(
        f"  the first tenth of the steps {first:.2f} CPU s, the last {last:.2f} "
        f"({last / first:.2f}x)"
    )


if __name__ == "__main__":
    main()
