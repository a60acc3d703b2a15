"""Compare benchmark: ``evalstore compare`` of two retrieval runs with many lists.

    python bench/compare.py [--lists 10000] [--items 10] [--repeat 3]

Builds a store of two retrieval runs on the same ``--lists`` lists of ``--items`` items
(Python API), computes their metrics once (``evaluate``), then times, each in a fresh
process, ``evalstore compare bench/a bench/b --format json`` (metric values cached: the
statistics and their queries alone). Prints wall seconds and CPU seconds of the whole
process (user + sys of every thread, from ``getrusage(RUSAGE_CHILDREN)`` around the
subprocess), best of ``--repeat``, and, in this process, the wall and CPU time of
:func:`evalstore.analysis.statistics.paired_stats` alone on the runs' per-list differences
(bootstrap interval and sign-flip test, 1,000 resamples and 10,000 sign vectors).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from evalstore import Store, evaluate
from evalstore.analysis.compare import paired_lists
from evalstore.analysis.statistics import paired_stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _measure


def build(db: Path, lists: int, items: int) -> None:
    rng = np.random.default_rng(0)
    group = np.repeat(np.arange(lists), items).astype(str)
    item = np.tile(np.arange(items), lists)
    label = np.where(item < 2, 1, -1)
    with Store(db) as store:
        for name, quality in (("a", 1.0), ("b", 1.05)):
            score = rng.standard_normal(group.size) + quality * (label == 1)
            store.ingest(
                {"group_id": group, "item_id": item, "score": score, "label": label},
                task="retrieval",
                run=f"bench/{name}",
                git_commit=None,
            )
        evaluate(store, ["bench/a", "bench/b"])


def timed(args: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one subprocess: CPU is user + sys of all its threads."""
    measured = _measure.run(args)
    return measured.wall, measured.cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lists", type=int, default=10_000)
    parser.add_argument("--items", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.duckdb"
        t0 = time.perf_counter()
        build(db, opts.lists, opts.items)
        print(f"store: 2 runs x {opts.lists} lists x {opts.items} items, built and evaluated "
              f"in {time.perf_counter() - t0:.1f} s")  # fmt: skip
        cli = [sys.executable, "-m", "evalstore"]
        startup = min(timed([*cli, "--help"]) for _ in range(opts.repeat))
        command = [*cli, "compare", "bench/a", "bench/b", "--db", str(db), "--format", "json"]
        best = min(timed(command) for _ in range(opts.repeat))
        print(f"evalstore compare (best of {opts.repeat}): {best[0]:.2f} s wall, "
              f"{best[1]:.2f} CPU-s (evalstore --help alone: {startup[0]:.2f} s wall, "
              f"{startup[1]:.2f} CPU-s)")  # fmt: skip
        with Store(db, read_only=True) as store:
            frame = paired_lists(
                store, store.resolve("bench/a"), store.resolve("bench/b"), "retrieval", "ap",
                '{"ties":"grouped"}',
            )  # fmt: skip
        diffs = frame["diff"].to_numpy()
        times = []
        for _ in range(opts.repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            paired_stats(diffs)
            times.append((time.perf_counter() - t0, time.process_time() - c0))
        wall, cpu = min(times)
        print(f"paired_stats on {diffs.size} differences: {wall:.3f} s wall, {cpu:.3f} CPU-s")


if __name__ == "__main__":
    main()
