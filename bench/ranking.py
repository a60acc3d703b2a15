"""Ranking-metric benchmark: the ``ap`` SQL vs the NumPy core vs scikit-learn, and what the
list index costs ingest, on the same data.

    python bench/ranking.py [--repeat 3] [--scale 1.0] [--data both] [--decimals 2]
                            [--only global|lists|tied] [--before /tmp/evalstore_before]
                            [--ap-sql OTHER.sql]

Data (``--data``): ``distinct``, float32 scores N(0, 1), +1 for positives, not rounded (almost
every score distinct, as a model's scores are), and ``ties``, the same scores rounded to
``--decimals`` decimals before the cast to float32 (a few hundred distinct values: heavy ties);
``both`` (the default) runs each case on each.

Cases (each ratio is measured in the same run, on the same data):

1. ``global``: one list of 10 M rows (task ``verification``, labels +1/-1, 30 % positives);
2. ``lists``: 10,000 lists x 1,000 items (10 M rows, task ``retrieval``, 5 % positives and at
   least one per list).

Each case is written to one Parquet file (int32 ids, float32 scores, int8 labels) and ingested
into the benchmark's store. Then, in this process, best of ``--repeat`` (CPU seconds of all
threads from ``time.process_time`` and wall seconds, each the least of the runs):

  - SQL: the ``metrics/ap`` query alone over the ingested rows (``fetchall``), ``grouped`` ties;
  - NumPy: ``evalstore.core.ranking.per_list("ap", ...)`` on the arrays already in memory;
  - scikit-learn: ``average_precision_score``, one call, or for ``lists`` a Python loop of one
    call per list (each list a row of a 2-D array);
  - for ``lists``, ``evaluate(store, [run], metrics=["ap"], recompute=True)``, for information;

and the values must agree to 1e-9 (``lists``: every list's AP). Then ingest, each run in a fresh
process writing a new database under ``/usr/bin/time -v`` (CPU of all threads, wall, that
process's peak memory), the three kinds alternated, best of ``--repeat``:

  - DuckDB ``create table t as select * from read_parquet(...)`` (the reference);
  - ``Store.ingest`` of the file with the code of ``--before`` (the checkout before the list
    index, e.g. ``git archive 2266a22 | tar -x -C /tmp/evalstore_before``; skipped if absent);
  - ``Store.ingest`` with this checkout (list index included).

3. ``tied`` (only with ``--only tied``): one tied list of ``--rows`` rows (rounded to
   ``--decimals``), whole processes: ``evalstore ingest`` + ``evalstore eval -m ap --ties T``
   for each tie policy T, and ``-m ndcg``, beside a pyarrow + scikit-learn AP process, medians
   of ``--repeat`` (bench/_tied.py says what runs), and each eval with the code of
   ``--before`` when given. Target: ingest + eval <= 0.5x the reference in CPU seconds
   (issue 32, point 5).

``--scale 0.1`` shrinks every case (lists: the number of lists) for a quick run. DuckDB uses
all cores; NumPy and scikit-learn one.

Targets, in CPU time, on each data: ``global``: SQL at most 1.0x NumPy and at least 4x faster
than scikit-learn; ``lists``: SQL at most 1.0x NumPy (scikit-learn's loop printed alone).
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from evalstore import Store
from evalstore.analysis.evaluate import evaluate
from evalstore.core.ranking import per_list
from evalstore.db import queries

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _measure
import _tied
from _measure import INGEST_CHILD, MIB, Measured, met

TOL = 1e-9
BEFORE = Path("/tmp/evalstore_before")

#: the AP query timed as "SQL": sql/metrics/ap.sql unless --ap-sql names another file
AP_TEXT: list[str] = []


def best_of(repeat: int, fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """The least CPU seconds (all threads) and the least wall seconds of ``repeat`` calls, and
    the last call's result."""
    cpu, wall, out = float("inf"), float("inf"), None
    for _ in range(repeat):
        gc.collect()
        c0, w0 = time.process_time(), time.perf_counter()
        out = fn()
        wall = min(wall, time.perf_counter() - w0)
        cpu = min(cpu, time.process_time() - c0)
    return cpu, wall, out


def make_scores(rng: np.random.Generator, pos: np.ndarray, decimals: int | None) -> np.ndarray:
    score = rng.standard_normal(pos.size) + pos.astype(np.float64)
    if decimals is not None:
        score = np.round(score, decimals)
    return score.astype(np.float32)


def ap_sql(store: Store, run_id: int, task: str) -> Callable[[], list[tuple[Any, ...]]]:
    text = AP_TEXT[0] if AP_TEXT else queries.load("metrics/ap").text
    params = queries.bind(text, {"runs": [run_id], "task": task, "ties": "grouped"})
    return lambda: store.con.execute(text, params).fetchall()


def run_id_of(store: Store, name: str) -> int:
    row = store.con.execute("select run_id from runs where name = ?", [name]).fetchone()
    if row is None:
        raise SystemExit(f"no run {name!r} after its ingest")
    return int(row[0])


def ingest_here(store: Store, parquet: Path, task: str, run: str) -> int:
    store.ingest(parquet, task=task, run=run, git_commit=None)
    store.con.execute("checkpoint")  # the table as a later session finds it
    return run_id_of(store, run)


def ingest_processes(
    parquet: Path, task: str, work: Path, repeat: int, before: Path | None
) -> dict[str, tuple[Measured, tuple[float, float]]]:
    """CTAS, ``Store.ingest`` before and after the list index, each in fresh processes,
    alternated, best of ``repeat``: the whole process and the ingest alone (CPU, wall)."""
    kinds: dict[str, Path | None] = {"duckdb CTAS": None, "after": None}
    if before is not None:
        kinds = {"duckdb CTAS": None, "before": before, "after": None}
    got: dict[str, list[Measured]] = {k: [] for k in kinds}
    for i in range(repeat):
        for kind, path in kinds.items():
            db = work / f"ingest-{i}.duckdb"
            arg = "duckdb" if kind == "duckdb CTAS" else "evalstore"
            got[kind].append(_measure.python(INGEST_CHILD, arg, parquet, db, task, pythonpath=path))
            db.unlink()
    return {k: (_measure.best(v), _measure.inner(v)) for k, v in got.items()}


# ----------------------------------------------------------------------------- cases


def case_global(
    store: Store,
    work: Path,
    n: int,
    data: str,
    decimals: int | None,
    repeat: int,
    before: Path | None,
) -> dict[str, Any]:
    rng = np.random.default_rng(1)
    pos = rng.random(n) < 0.3
    labels = np.where(pos, 1, -1).astype(np.int8)
    scores = make_scores(rng, pos, decimals)
    parquet = work / "global.parquet"
    pq.write_table(
        pa.table({"item_id": np.arange(n, dtype=np.int32), "score": scores, "label": labels}),
        parquet,
    )
    run_id = ingest_here(store, parquet, "verification", f"global-{data}")
    sql = best_of(repeat, ap_sql(store, run_id, "verification"))
    group = np.zeros(n, dtype=np.int64)
    npy = best_of(repeat, lambda: per_list("ap", group, scores, labels))
    from sklearn.metrics import average_precision_score

    sk = best_of(repeat, lambda: average_precision_score(pos, scores))
    values = {"sql": float(sql[2][0][2]), "numpy": float(npy[2][1][0]), "sklearn": float(sk[2])}
    ingest = ingest_processes(parquet, "verification", work, repeat, before)
    parquet.unlink()
    return {
        "name": f"global list, {n:,} rows",
        "sql": sql[:2],
        "numpy": npy[:2],
        "sklearn": sk[:2],
        "values": values,
        "agree": max(values.values()) - min(values.values()) <= TOL,
        "targets": (1.0, 4.0),
        "ingest": ingest,
        "distinct": int(np.unique(scores).size),
    }


def case_lists(
    store: Store,
    work: Path,
    n_lists: int,
    per: int,
    data: str,
    decimals: int | None,
    repeat: int,
    before: Path | None,
) -> dict[str, Any]:
    rng = np.random.default_rng(2)
    n = n_lists * per
    pos = rng.random(n) < 0.05
    pos[np.arange(n_lists) * per + rng.integers(0, per, n_lists)] = True  # >= 1 per list
    labels = np.where(pos, 1, -1).astype(np.int8)
    scores = make_scores(rng, pos, decimals)
    group = np.repeat(np.arange(n_lists, dtype=np.int32), per)
    item = np.tile(np.arange(per, dtype=np.int32), n_lists)
    parquet = work / "lists.parquet"
    pq.write_table(
        pa.table({"group_id": group, "item_id": item, "score": scores, "label": labels}),
        parquet,
    )
    run = f"lists-{data}"
    run_id = ingest_here(store, parquet, "retrieval", run)
    sql = best_of(repeat, ap_sql(store, run_id, "retrieval"))
    npy = best_of(repeat, lambda: per_list("ap", group, scores, labels))
    np_groups, np_vals = npy[2]
    from sklearn.metrics import average_precision_score

    y2, s2 = pos.reshape(n_lists, per), scores.reshape(n_lists, per)

    def sk_loop() -> np.ndarray:
        return np.array([average_precision_score(y2[i], s2[i]) for i in range(n_lists)])

    sk = best_of(repeat, sk_loop)
    full = best_of(repeat, lambda: evaluate(store, [run], metrics=["ap"], recompute=True))
    sql_vals = np.full(n_lists, np.nan)
    for _, gid, value in sql[2]:
        sql_vals[int(gid)] = np.nan if value is None else value
    if not np.array_equal(np_groups, np.arange(n_lists)):
        raise SystemExit("the NumPy core returned other lists than the data's")
    means = {
        "sql": float(np.mean(sql_vals)),
        "numpy": float(np.mean(np_vals)),
        "sklearn": float(np.mean(sk[2])),
    }
    diff = float(max(np.max(np.abs(sql_vals - np_vals)), np.max(np.abs(sk[2] - np_vals))))
    ingest = ingest_processes(parquet, "retrieval", work, repeat, before)
    parquet.unlink()
    return {
        "name": f"{n_lists:,} lists x {per:,} items",
        "sql": sql[:2],
        "numpy": npy[:2],
        "sklearn": sk[:2],
        "evaluate": full[:2],
        "values": means,
        "per_list_diff": diff,
        "agree": max(means.values()) - min(means.values()) <= TOL and diff <= TOL,
        "targets": (1.0, None),
        "ingest": ingest,
        "distinct": int(np.unique(scores).size),
    }


# ----------------------------------------------------------------------------- report


def report(case: dict[str, Any], data: str) -> None:
    (sql_cpu, sql_wall), (np_cpu, np_wall), (sk_cpu, sk_wall) = (
        case["sql"],
        case["numpy"],
        case["sklearn"],
    )
    max_ratio, min_speedup = case["targets"]
    print(f"\n{case['name']}, {data} scores ({case['distinct']:,} distinct values)")
    print(f"  {'':30} {'CPU s':>7} {'wall s':>7}")
    print(f"  {'SQL metrics/ap':30} {sql_cpu:7.2f} {sql_wall:7.2f}")
    print(f"  {'NumPy per_list':30} {np_cpu:7.2f} {np_wall:7.2f}")
    loop = "scikit-learn (loop over lists)" if "evaluate" in case else "scikit-learn"
    print(f"  {loop:30} {sk_cpu:7.2f} {sk_wall:7.2f}")
    if "evaluate" in case:
        ev_cpu, ev_wall = case["evaluate"]
        print(f"  {'evaluate() (compute + cache)':30} {ev_cpu:7.2f} {ev_wall:7.2f}")
    r1, r2 = sql_cpu / np_cpu, sk_cpu / sql_cpu
    print(
        f"  SQL / NumPy    = {r1:6.2f}x CPU, {sql_wall / np_wall:6.2f}x wall "
        f"(target <= {max_ratio:.1f}x CPU: {met(r1 <= max_ratio)})"
    )
    target = f"(target >= {min_speedup:.1f}x CPU: {met(r2 >= min_speedup)})" if min_speedup else ""
    print(f"  sklearn / SQL  = {r2:6.2f}x CPU, {sk_wall / sql_wall:6.2f}x wall {target}")
    what = "mean AP" if "per_list_diff" in case else "AP"
    for k, v in case["values"].items():
        print(f"  {what} {k:8} = {v:.15f}")
    extra = (
        f", largest per-list difference {case['per_list_diff']:.1e}"
        if "per_list_diff" in case
        else ""
    )
    print(f"  values agree to {TOL:g}: {'yes' if case['agree'] else 'NO'}{extra}")
    ing = case["ingest"]
    _, (ref_cpu, ref_wall) = ing["duckdb CTAS"]
    print("  ingest of the Parquet file, fresh process and database, best of each:")
    print(
        f"  {'':22} {'ingest alone':>15} {'/ CTAS':>15} {'whole process':>25}"
        f"\n  {'':22} {'CPU s':>7} {'wall s':>7} {'CPU':>7} {'wall':>7} "
        f"{'CPU s':>7} {'wall s':>7} {'peak MiB':>9}"
    )
    names = {
        "duckdb CTAS": "DuckDB CTAS",
        "before": "Store.ingest before",
        "after": "Store.ingest after",
    }
    for kind, (m, (cpu, wall)) in ing.items():
        print(
            f"  {names[kind]:22} {cpu:7.2f} {wall:7.2f} {cpu / ref_cpu:6.2f}x "
            f"{wall / ref_wall:6.2f}x {m.cpu:7.2f} {m.wall:7.2f} {m.peak_bytes / MIB:9.0f}"
        )
    if "before" in ing:
        (b, (b_cpu, b_wall)), (a, (a_cpu, a_wall)) = ing["before"], ing["after"]
        print(
            f"  list index, ingest alone: after / before = {a_cpu / b_cpu:.2f}x CPU "
            f"({a_cpu - b_cpu:+.2f} s), {a_wall / b_wall:.2f}x wall ({a_wall - b_wall:+.2f} s); "
            f"peak {a.peak_bytes / b.peak_bytes:.2f}x"
        )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--repeat", type=int, default=3, help="best of N runs (default 3)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every size (0.1 = quick)")
    ap.add_argument("--data", choices=["distinct", "ties", "both"], default="both")
    ap.add_argument("--decimals", type=int, default=2, help="rounding of the ties data")
    ap.add_argument("--rows", type=int, default=10_000_000, help="rows of the global list")
    ap.add_argument("--lists", type=int, default=10_000)
    ap.add_argument("--items", type=int, default=1_000, help="items per list")
    ap.add_argument("--only", choices=["global", "lists", "tied"], help="run one case only")
    ap.add_argument(
        "--before",
        type=Path,
        default=BEFORE,
        help="a checkout of the code before the list index, for the ingest comparison "
        f"(default {BEFORE}; skipped if absent)",
    )
    ap.add_argument("--workdir", type=Path, default=None, help="where the databases go")
    ap.add_argument(
        "--ap-sql",
        type=Path,
        default=None,
        help="time this AP query (same parameters and output) instead of sql/metrics/ap.sql, "
        "to try a change; evaluate() still uses the repository's SQL",
    )
    args = ap.parse_args()
    if args.ap_sql is not None:
        AP_TEXT.append(args.ap_sql.read_text())
    before = args.before if (args.before / "evalstore").is_dir() else None
    warnings.filterwarnings("ignore", module="sklearn")
    recipes = {"distinct": None, "ties": args.decimals}
    if args.data != "both":
        recipes = {args.data: recipes[args.data]}

    print(
        f"best of {args.repeat}; AP SQL: {args.ap_sql or 'sql/metrics/ap.sql'}; ties data "
        f"rounded to {args.decimals} decimals; before: {before or 'not measured'}"
    )
    print(_measure.load_note())
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        work = Path(tmp)
        if args.only == "tied":
            rows = int(args.rows * args.scale)
            _tied.report(_tied.run(work, rows, args.decimals, args.repeat, before))
            print(_measure.load_note())
            return
        with Store(work / "bench.duckdb") as store:
            for data, decimals in recipes.items():
                if args.only in (None, "global"):
                    n = int(args.rows * args.scale)
                    report(case_global(store, work, n, data, decimals, args.repeat, before), data)
                    gc.collect()
                if args.only in (None, "lists"):
                    n_lists = max(1, int(args.lists * args.scale))
                    case = case_lists(
                        store, work, n_lists, args.items, data, decimals, args.repeat, before
                    )
                    report(case, data)
                    gc.collect()
    print(_measure.load_note())


if __name__ == "__main__":
    main()
