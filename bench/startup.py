"""Start-up benchmark: what a short command costs, against bare Python and bare DuckDB.

    python bench/startup.py [--runs 300] [--repeat 5]

Builds a store of ``--runs`` small runs in a temporary folder (through the public API; the
metrics of the first run computed), then runs each command below ``--repeat`` times, the
commands alternated, each in a fresh process with its output discarded (piped), and takes the
median of the CPU seconds (user + system of every thread, bench/_measure.py) and of the wall
seconds:

  - ``python -c pass`` and ``python -c "import duckdb, polars, numpy"``: the floor and the
    cost of the heavy libraries;
  - ``evalstore --help`` and ``evalstore runs --help``;
  - ``evalstore runs`` on the store, against its reference: a bare ``python -c`` that
    connects to the same file read-only and prints every row of ``v_runs``;
  - ``evalstore sql "select 1"`` on the store, against its reference, DuckDB's own process:
    ``python -c "import duckdb; duckdb.connect(STORE).sql('select 1').fetchall()"``;
  - ``evalstore eval RUN`` of the run whose values are cached (printing them);
  - ``evalstore eval RUN2 -m ap`` of a run whose AP is not cached yet (computed, stored and
    printed), each time on a fresh copy of the store (the copy not timed).

The children compile their bytecode once, into a private folder (``PYTHONPYCACHEPREFIX``),
as an installed package has it: a checkout run with ``PYTHONDONTWRITEBYTECODE`` would
otherwise compile evalstore's modules at every start, and not DuckDB's.

Prints a table, with each command's CPU time as a ratio to its reference (``evalstore sql``'s
is DuckDB's ``select 1``, the others' the ``v_runs`` query), and whether the targets hold:
``evalstore --help`` within 0.3 CPU seconds, ``evalstore runs`` within 1.5 times its
reference, ``evalstore sql "select 1"`` within 1.5 times DuckDB's and ``eval`` of cached
values within 0.3 CPU seconds (issue 32, point 4).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

from evalstore import Store, evaluate

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _measure

HELP_TARGET = 0.3  # CPU seconds
RUNS_TARGET = 1.5  # times the bare DuckDB query
SQL_TARGET = 1.5  # times DuckDB's own select 1
EVAL_TARGET = 0.3  # CPU seconds
COMPUTED = "evalstore eval RUN2 -m ap (computed, 15 rows)"

REFERENCE = (
    "import sys, duckdb; con = duckdb.connect(sys.argv[1], read_only=True); "
    "print(con.sql('select * from v_runs order by created_at desc').fetchall())"
)
SELECT_1 = "import sys, duckdb; duckdb.connect(sys.argv[1]).sql('select 1').fetchall()"


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
        evaluate(store, ["bench/run0000"])


def measure(argv: list[str], env: dict[str, str | None]) -> tuple[float, float]:
    """CPU seconds (user + system) and wall seconds of one process running ``argv``."""
    done = _measure.run(argv, env=env, capture=False)
    return done.cpu, done.wall


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
        scratch = Path(tmp) / "scratch.duckdb"  # a copy of db for each computing command
        make_store(db, args.runs)
        env: dict[str, str | None] = {
            "PYTHONDONTWRITEBYTECODE": None,
            "PYTHONPYCACHEPREFIX": str(Path(tmp) / "pycache"),
        }
        runs_ref = f"bare duckdb: select * from v_runs ({args.runs} rows)"
        sql_ref = "bare duckdb: connect, select 1"
        commands = {
            "python -c pass": [python, "-c", "pass"],
            "python -c 'import duckdb, polars, numpy'": [
                python,
                "-c",
                "import duckdb, polars, numpy",
            ],
            "evalstore --help": [*evalstore, "--help"],
            "evalstore runs --help": [*evalstore, "runs", "--help"],
            runs_ref: [python, "-c", REFERENCE, str(db)],
            f"evalstore runs ({args.runs} runs)": [*evalstore, "runs", "--db", str(db)],
            sql_ref: [python, "-c", SELECT_1, str(db)],
            'evalstore sql "select 1"': [*evalstore, "sql", "select 1", "--db", str(db)],
            "evalstore eval RUN (cached values)": [
                *evalstore,
                "eval",
                "bench/run0000",
                "--db",
                str(db),
            ],
            COMPUTED: [*evalstore, "eval", "bench/run0001", "-m", "ap", "--db", str(scratch)],
        }
        reference = {name: runs_ref for name in commands}
        reference[sql_ref] = reference['evalstore sql "select 1"'] = sql_ref
        for argv in commands.values():  # warm the file cache and compile the bytecode
            shutil.copyfile(db, scratch)
            measure(argv, env)
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(args.repeat):
            for name, argv in commands.items():
                shutil.copyfile(db, scratch)  # the computed value not cached yet
                samples[name].append(measure(argv, env))
    cpu = {name: statistics.median(c for c, _ in s) for name, s in samples.items()}
    wall = {name: statistics.median(w for _, w in s) for name, s in samples.items()}
    print(f"median of {args.repeat} alternated runs; ratio = CPU time / its bare duckdb query")
    print(f"{'command':58} {'CPU s':>7} {'wall s':>7} {'ratio':>6}")
    for name in commands:
        ratio = cpu[name] / cpu[reference[name]]
        print(f"{name:58} {cpu[name]:7.3f} {wall[name]:7.3f} {ratio:6.2f}")
    help_cpu = cpu["evalstore --help"]
    runs_ratio = cpu[f"evalstore runs ({args.runs} runs)"] / cpu[runs_ref]
    sql_ratio = cpu['evalstore sql "select 1"'] / cpu[sql_ref]
    eval_cpu = cpu["evalstore eval RUN (cached values)"]

    def met(ok: bool) -> str:
        return "met" if ok else "NOT met"

    print(f"target evalstore --help <= {HELP_TARGET} CPU s: {help_cpu:.3f} "
          f"{met(help_cpu <= HELP_TARGET)}")  # fmt: skip
    print(f"target evalstore runs <= {RUNS_TARGET}x the bare query: {runs_ratio:.2f}x "
          f"{met(runs_ratio <= RUNS_TARGET)}")  # fmt: skip
    print(f'target evalstore sql "select 1" <= {SQL_TARGET}x DuckDB\'s: {sql_ratio:.2f}x '
          f"{met(sql_ratio <= SQL_TARGET)}")  # fmt: skip
    print(f"target evalstore eval of cached values <= {EVAL_TARGET} CPU s: {eval_cpu:.3f} "
          f"{met(eval_cpu <= EVAL_TARGET)}")  # fmt: skip


if __name__ == "__main__":
    main()
