"""Start-up benchmark: what a short command costs, against bare Python and bare DuckDB.

    python bench/startup.py [--runs 300] [--repeat 5]

Builds a store of ``--runs`` small runs in a temporary folder (through the public API), then
runs each command below ``--repeat`` times, the commands alternated, each in a fresh process
with its output discarded, and takes the median of the CPU seconds (user + system, from
``os.wait4``) and of the wall seconds:

  - ``python -c pass`` and ``python -c "import duckdb, polars, numpy"``: the floor and the
    cost of the heavy libraries;
  - ``evalstore --help`` and ``evalstore runs --help``;
  - ``evalstore runs`` on the store, against the reference: a bare ``python -c`` that
    connects to the same file read-only and prints every row of ``v_runs``.

Prints a table, with each command's CPU time as a ratio to the reference, and whether the
targets hold: ``evalstore --help`` within 0.3 CPU seconds, ``evalstore runs`` within 1.5 times
the reference.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from evalstore import Store

HELP_TARGET = 0.3  # CPU seconds
RUNS_TARGET = 1.5  # times the bare DuckDB query

REFERENCE = (
    "import sys, duckdb; con = duckdb.connect(sys.argv[1], read_only=True); "
    "print(con.sql('select * from v_runs order by created_at desc').fetchall())"
)


def make_store(path: Path, runs: int) -> None:
    rng = np.random.default_rng(0)
    lists, items = 3, 5
    with Store(path) as store:
        for i in range(runs):
            store.ingest(
                {
                    "group_id": np.repeat(np.arange(lists), items),
                    "item_id": np.tile(np.arange(items), lists),
                    "score": rng.standard_normal(lists * items),
                    "label": rng.choice([-1, 1], size=lists * items),
                },
                task="retrieval",
                run=f"bench/run{i:04d}",
                params={"seed": i % 5, "lr": 10.0 ** -(i // 5 % 4)},
                tags=["best"] if i % 7 == 0 else [],
                git_commit=f"{i:040x}",
            )


def measure(argv: list[str]) -> tuple[float, float]:
    """CPU seconds (user + system) and wall seconds of one process running ``argv``."""
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = code = os.waitstatus_to_exitcode(status)
        if code != 0:
            errors.seek(0)
            raise SystemExit(f"{' '.join(argv)} failed ({code}):\n{errors.read().decode()}")
    return usage.ru_utime + usage.ru_stime, wall


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    python = sys.executable
    script = Path(python).parent / "evalstore"
    evalstore = [str(script)] if script.exists() else [python, "-m", "evalstore"]
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "evalstore.duckdb"
        make_store(db, args.runs)
        commands = {
            "python -c pass": [python, "-c", "pass"],
            "python -c 'import duckdb, polars, numpy'": [
                python,
                "-c",
                "import duckdb, polars, numpy",
            ],
            "evalstore --help": [*evalstore, "--help"],
            "evalstore runs --help": [*evalstore, "runs", "--help"],
            f"bare duckdb: select * from v_runs ({args.runs} rows)": [
                python,
                "-c",
                REFERENCE,
                str(db),
            ],
            f"evalstore runs ({args.runs} runs)": [*evalstore, "runs", "--db", str(db)],
        }
        for argv in commands.values():  # warm the file cache and the bytecode
            measure(argv)
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(args.repeat):
            for name, argv in commands.items():
                samples[name].append(measure(argv))
    cpu = {name: statistics.median(c for c, _ in s) for name, s in samples.items()}
    wall = {name: statistics.median(w for _, w in s) for name, s in samples.items()}
    reference = next(name for name in commands if name.startswith("bare duckdb"))
    print(f"median of {args.repeat} alternated runs; ratio = CPU time / the bare duckdb query")
    print(f"{'command':58} {'CPU s':>7} {'wall s':>7} {'ratio':>6}")
    for name in commands:
        print(f"{name:58} {cpu[name]:7.3f} {wall[name]:7.3f} {cpu[name] / cpu[reference]:6.2f}")
    help_cpu = cpu["evalstore --help"]
    runs_ratio = cpu[f"evalstore runs ({args.runs} runs)"] / cpu[reference]
    print(
        f"target evalstore --help <= {HELP_TARGET} CPU s: {help_cpu:.3f} "
        f"{'met' if help_cpu <= HELP_TARGET else 'NOT met'}"
    )
    print(
        f"target evalstore runs <= {RUNS_TARGET}x the bare query: {runs_ratio:.2f}x "
        f"{'met' if runs_ratio <= RUNS_TARGET else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
