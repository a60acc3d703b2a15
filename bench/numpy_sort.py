"""NumPy's sorts with and without its AVX-512 targets, and what that does to ``evalstore ingest``
(evalstore/cli/numpy_sort.py: on AMD Zen 4 an ingest process imports NumPy without them).

    python bench/numpy_sort.py [--rows 10000000] [--lists 10000] [--repeat 3]

1. ``np.sort`` of 2^20 random uint64 keys and of 2^20 float32 N(0, 1) values, each in a fresh
   process, with NumPy's own targets and with ``NPY_DISABLE_CPU_FEATURES`` set to the AVX-512
   ones: the least CPU ms of 5 sorts (a copy sorted each time), per process.
2. Whole ``evalstore ingest`` processes of one Parquet file (bench/ingest.py's generator: int32
   ids, float32 scores, ``--lists`` lists of ``--rows`` rows) into a new store: as it runs, and
   with ``NPY_DISABLE_CPU_FEATURES=""`` (NumPy's own choice kept); alternated, ``--repeat``
   each, medians of CPU seconds (all threads) and peak memory. The two stores hold the same
   rows (checked). On a CPU that is not Zen 4 both rows are the same process.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import _measure
import duckdb
from ingest import make_file

from evalstore.cli.numpy_sort import AVX512_TARGETS, VARIABLE, slow_avx512_sort

SORTS = """
import time, numpy as np
rng = np.random.default_rng(0)
for name, a in (("uint64", rng.integers(0, 2**63, 2**20, dtype=np.uint64)),
                ("float32", rng.standard_normal(2**20).astype(np.float32))):
    best = float("inf")
    for _ in range(5):
        b = a.copy()
        t = time.process_time()
        b.sort()
        best = min(best, time.process_time() - t)
    print(name, round(best * 1000, 1))
"""


def sorts() -> dict[str, dict[str, float]]:
    """The least CPU ms of a 2^20 sort, per dtype, with NumPy's own targets and without
    AVX-512."""
    out = {}
    for name, value in (("NumPy's own", None), ("AVX-512 disabled", AVX512_TARGETS)):
        env = {k: v for k, v in os.environ.items() if k != VARIABLE}
        if value is not None:
            env[VARIABLE] = value
        done = subprocess.run([sys.executable, "-c", SORTS], capture_output=True, text=True,
                              env=env, check=True)  # fmt: skip
        out[name] = {k: float(v) for k, v in (line.split() for line in done.stdout.splitlines())}
    return out


def _rows(db: Path) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:  # the index tables the sorts write, and the row count
        return [
            con.execute(f"select count(*), sum(hash(columns(*))) from {t}").fetchone()
            for t in ("positive_ranks", "list_stats", "list_rows_int_f32")
        ]
    finally:
        con.close()


def ingests(rows: int, lists: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = work / "f.parquet"
        make_file(data, rows, lists, "int", "float32")
        got: dict[str, list[_measure.Measured]] = {"as it runs": [], "NumPy's own": []}
        stored = {}
        for i in range(repeat):
            for name, env in (("as it runs", {VARIABLE: None}), ("NumPy's own", {VARIABLE: ""})):
                db = work / f"{i}-{len(name)}.duckdb"
                argv = [sys.executable, "-m", "evalstore", "ingest", str(data), "-t", "retrieval",
                        "-r", "b/x", "--db", str(db), "--git-commit", "abc"]  # fmt: skip
                got[name].append(_measure.run(argv, env=env))
                stored[name] = _rows(db)
                db.unlink()
        print(f"evalstore ingest of {rows:,} rows in {lists:,} lists (median of {repeat}):")
        print("| NumPy | CPU s | wall s | peak MiB |")
        print("|---|---|---|---|")
        med = {}
        for name, values in got.items():
            m = med[name] = _measure.median(values)
            print(f"| {name} | {m.cpu:.2f} | {m.wall:.2f} | {m.peak_bytes / _measure.MIB:.0f} |")
        ratio = med["as it runs"].cpu / med["NumPy's own"].cpu
        print(f"as it runs / NumPy's own: {ratio:.2f}x CPU")
        same = stored["as it runs"] == stored["NumPy's own"]
        print(f"the same rows stored: {'yes' if same else 'NO'}")
        if not same:
            raise SystemExit("the two ingests stored different rows")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--lists", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(_measure.load_note())
    zen4 = slow_avx512_sort(Path("/proc/cpuinfo").read_text())
    print(f"this CPU is AMD Zen 4 with AVX-512: {'yes' if zen4 else 'no'}")
    for name, ms in sorts().items():
        print(f"np.sort of 2^20 values, {name}: " + ", ".join(f"{k} {v} ms" for k, v in ms.items()))
    ingests(args.rows, args.lists, args.repeat)


if __name__ == "__main__":
    main()
