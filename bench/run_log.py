"""Scalars logged from a training loop: ``Run.log`` called every batch, and the whole run
through ``finish`` (every value in the store).

    python bench/run_log.py [--steps 5000] [--scalars 4] [--reference 300] [--repeat 3]

A loop of ``--steps`` ``run.log({...}, step=step)`` calls of ``--scalars`` values each (20,000
values by default) on a Run of a fresh local store (``evalstore.init``, its thread writing
every 2 s as by default), timed two ways: the log calls alone (what the training loop pays),
and the whole from the first call until ``finish`` returns with the values committed. Beside
them, measured in the same run: the same values appended to a Python list (the floor of any
buffer), and ``Store.log_metric`` on an open store, one value a call (``--reference`` values:
each is its own transaction). Each is the best of ``--repeat``, wall seconds and CPU seconds
of the process (every thread). Figures are values per second of wall time.

The issue's bar: >= 10,000 values/s into a local store (the whole, through ``finish``).
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import duckdb

import evalstore
from evalstore import Store

BAR = 10_000.0


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def best(repeat: int, fn: Callable[[int], tuple[float, float] | None]) -> tuple[float, float]:
    """The best (wall, CPU) seconds of ``repeat`` calls of ``fn(k)``; ``fn`` may return the
    (wall, CPU) of the part it times itself."""
    wall, used = float("inf"), float("inf")
    for k in range(repeat):
        t0, c0 = time.perf_counter(), cpu()
        own = fn(k)
        took = own if own is not None else (time.perf_counter() - t0, cpu() - c0)
        wall, used = min(wall, took[0]), min(used, took[1])
    return wall, used


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5_000)
    parser.add_argument("--scalars", type=int, default=4)
    parser.add_argument("--reference", type=int, default=300,
                        help="values logged one a call by Store.log_metric")  # fmt: skip
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    names = [f"m{j}" for j in range(args.scalars)]
    n = args.steps * args.scalars
    batches = [{name: 1.0 / (step + j + 1) for j, name in enumerate(names)}
               for step in range(args.steps)]  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="run_log-"))
    times: dict[str, tuple[float, float]] = {}

    def loop(k: int) -> tuple[float, float]:
        run = evalstore.init(f"bench/loop{k}", db=work / f"loop{k}.duckdb", git_commit=None)
        t0, c0 = time.perf_counter(), cpu()
        for step, values in enumerate(batches):
            run.log(values, step=step)
        took = (time.perf_counter() - t0, cpu() - c0)
        run.finish()
        return took

    def whole(k: int) -> tuple[float, float]:
        db = work / f"whole{k}.duckdb"
        run = evalstore.init(f"bench/whole{k}", db=db, git_commit=None)
        t0, c0 = time.perf_counter(), cpu()
        for step, values in enumerate(batches):
            run.log(values, step=step)
        run.finish()
        took = (time.perf_counter() - t0, cpu() - c0)
        con = duckdb.connect(str(db), read_only=True)
        stored = con.execute("select count(*) from logged_values").fetchall()[0][0]
        con.close()
        if stored != n:
            sys.exit(f"the store holds {stored} values, not {n}")
        return took

    def appends(_: int) -> None:
        kept: list[tuple[str, int, float]] = []
        for step, values in enumerate(batches):
            for name, value in values.items():
                kept.append((name, step, value))

    def one_a_call(k: int) -> tuple[float, float]:
        with Store(work / f"ref{k}.duckdb") as store:
            store.ingest({"group_id": [0], "item_id": [0], "score": [0.0], "label": [1]},
                         task="retrieval", run="bench/ref", git_commit=None)  # fmt: skip
            t0, c0 = time.perf_counter(), cpu()
            for i in range(args.reference):
                store.log_metric("bench/ref", names[i % args.scalars], 0.5,
                                 step=i // args.scalars)  # fmt: skip
            return time.perf_counter() - t0, cpu() - c0

    times["loop"] = best(args.repeat, loop)
    times["whole"] = best(args.repeat, whole)
    times["appends"] = best(args.repeat, appends)
    times["log_metric"] = best(args.repeat, one_a_call)
    rate = {key: (args.reference if key == "log_metric" else n) / max(wall, 1e-9)
            for key, (wall, _) in times.items()}  # fmt: skip
    print(f"{n:,} values ({args.steps:,} steps x {args.scalars} scalars), best of {args.repeat}")
    print()
    print("| what | values | wall s | CPU s | values/s |")
    print("|---|---:|---:|---:|---:|")
    rows = [("run.log calls (the loop)", "loop", n), ("the whole, through finish", "whole", n),
            ("list appends (the floor)", "appends", n),
            ("Store.log_metric, one value a call", "log_metric", args.reference)]  # fmt: skip
    for label, key, count in rows:
        wall, used = times[key]
        print(f"| {label} | {count:,} | {wall:.3f} | {used:.3f} | {rate[key]:,.0f} |")
    print()
    slower = times["loop"][0] / times["appends"][0]
    faster = rate["whole"] / rate["log_metric"]
    print(f"the loop / list appends: {slower:.2f}x the time; "
          f"the whole / log_metric: {faster:.1f}x the values/s")  # fmt: skip
    met = "met" if rate["whole"] >= BAR else "NOT met"
    print(f"bar: >= {BAR:,.0f} values/s into a local store, through finish: {met}")


if __name__ == "__main__":
    main()
