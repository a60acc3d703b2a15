"""Row counts without scans: `runs` and `show` on a store of 200 M ranked rows.

    python bench/counts.py [--queries 10000] [--items 20000] [--repeat 5]

Writes 10,000 lists x 20,000 items (float32 scores, 5 positives per list) to Parquet with
DuckDB, ingests them into a fresh store, then times the queries behind `evalstore runs`
(store/list_runs, through ``list_run_rows`` as the command calls it) and `evalstore show`
(store/get_run), which read the counts ingest keeps
per list (list_stats), against the same counts computed by scanning the rows (what those
queries did before schema 12), each the best of ``--repeat``, CPU seconds of the process
(all DuckDB threads) beside wall seconds.

Target: each of the two queries under 0.2 s on 200 M rows.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

from evalstore import Store
from evalstore.db import queries
from evalstore.runs.selection import list_run_rows

TARGET = 0.2

#: the per-run counts by a scan of the rows, as store/list_runs counted them before schema 12
SCAN = "select run_id, cast(task as varchar), count(*) from score_items group by all"


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def best(repeat: int, fn: Callable[[], Any]) -> tuple[float, float]:
    """The best (wall, CPU) seconds of ``repeat`` calls."""
    wall, used = float("inf"), float("inf")
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), cpu()
        fn()
        wall, used = min(wall, time.perf_counter() - t0), min(used, cpu() - c0)
    return wall, used


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rows = args.queries * args.items
    work = Path(tempfile.mkdtemp(prefix="evalstore-counts-"))
    try:
        parquet = work / "lists.parquet"
        duckdb.execute(
            f"""copy (select cast(i // {args.items} as integer) as group_id,
                             cast(i % {args.items} as integer) as item_id,
                             cast(random() as float) as score,
                             cast(case when i % {args.items} < 5 then 1 else -1 end as tinyint)
                               as label
                      from range({rows}) t(i))
                to '{parquet}' (format parquet)"""
        )
        with Store(work / "db.duckdb") as store:
            t0 = time.perf_counter()
            run_id = store.ingest(parquet, task="retrieval", run="scale/counts").run_id
            print(f"{rows:,} rows ingested in {time.perf_counter() - t0:.1f} s")
            con = store.con
            # the query through the function `evalstore runs` calls, which binds whatever
            # parameters store/list_runs takes today (the bench failed when it bound them itself)
            cases = {
                "runs (store/list_runs)": lambda: list_run_rows(store),
                "show (store/get_run)": lambda: queries.fetch_rows(
                    con, "store/get_run", {"run_id": run_id}
                ),
                "the same counts by a scan": lambda: con.execute(SCAN).fetchall(),
            }
            print(f"\n| query, {rows:,} rows | wall s | CPU s |\n|---|---:|---:|")
            timed = {name: best(args.repeat, fn) for name, fn in cases.items()}
            for name, (wall, used) in timed.items():
                print(f"| {name} | {wall:.4f} | {used:.4f} |")
            met = all(timed[n][0] < TARGET for n in list(cases)[:2])
            print(f"\ntarget: runs and show under {TARGET} s: {'met' if met else 'NOT met'}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
