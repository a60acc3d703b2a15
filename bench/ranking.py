"""Ranking-metric benchmark: the ``ap`` SQL vs the NumPy core vs scikit-learn, on the same data.

    python bench/ranking.py [--repeat 3] [--scale 1.0] [--decimals 4] [--hpatches]
                            [--ap-sql OTHER.sql]

Cases (each ratio is measured in the same run, on the same data; each time is the best of
``--repeat`` runs):

1. ``global``: one list of 10 M rows (verification-like: task ``verification``, no
   ``group_id``, labels +1/-1, 30 % positives, scores N(0, 1) + 1 for positives rounded to
   ``--decimals`` so that many scores tie). Times
     - SQL: the ``metrics/ap`` query alone over the already-ingested table (``fetchall``);
     - NumPy: ``evalstore.core.ranking.per_list("ap", ...)`` on arrays already in memory;
     - scikit-learn: ``sklearn.metrics.average_precision_score``;
   and checks the three values agree to 1e-9.
2. ``lists``: 10,000 lists x 1,000 items (10 M rows, task ``retrieval``, 5 % positives and at
   least one per list, same score recipe). SQL and NumPy as above, scikit-learn as a Python
   loop of ``average_precision_score`` over the lists (each list already a row of a 2-D array).
   Checks that the mean AP agrees to 1e-9 (and prints the largest per-list difference).
   Also times the full path ``evaluate(store, [run], metrics=["ap"], recompute=True)``
   (compute + cache), for information.
3. ``--hpatches`` (off by default, minutes): 10,000 queries x 20,000 items (200 M rows) written
   to Parquet, then, in a fresh process with DuckDB ``memory_limit`` (``--memory-limit``) and a
   ``temp_directory``: ``Store.ingest`` + ``evaluate(..., metrics=["ap"])``; reports both
   times and the peak RSS of that process. ``--hpatches-queries`` / ``--hpatches-items``
   change the shape (e.g. 2000 x 20000 for a 40 M-row variant).

``--scale 0.1`` shrinks every case's number of rows (lists: the number of lists) for a quick
run. DuckDB uses its default thread count (all cores); NumPy and scikit-learn use one core.

Targets: SQL at most 1.0x NumPy and at least 4x faster than scikit-learn on the global list;
SQL at most 1.0x NumPy and at least 5x faster than the scikit-learn loop on 10k lists.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from evalstore import Store, queries
from evalstore.core.ranking import per_list
from evalstore.evaluate import evaluate

TOL = 1e-9


def best_of(repeat: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    """The best wall time of ``repeat`` calls and the last call's result."""
    best, out = float("inf"), None
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def make_scores(rng: np.random.Generator, pos: np.ndarray, decimals: int | None) -> np.ndarray:
    score = rng.standard_normal(pos.size) + pos.astype(np.float64)
    return np.round(score, decimals) if decimals is not None else score


#: the AP query timed as "SQL": sql/metrics/ap.sql unless --ap-sql names another file
AP_TEXT: list[str] = []


def ap_sql(store: Store, run_id: int, task: str) -> Callable[[], list[tuple[Any, ...]]]:
    text = AP_TEXT[0] if AP_TEXT else queries.load("metrics/ap").text
    params = queries.bind(text, {"runs": [run_id], "task": task, "ties": "grouped"})
    return lambda: store.con.execute(text, params).fetchall()


def run_id_of(store: Store, name: str) -> int:
    return int(store.con.execute("select run_id from runs where name = ?", [name]).fetchone()[0])


# ----------------------------------------------------------------------------- cases


def case_global(store: Store, n: int, decimals: int | None, repeat: int) -> dict[str, Any]:
    rng = np.random.default_rng(1)
    pos = rng.random(n) < 0.3
    labels = np.where(pos, 1, -1).astype(np.int8)
    scores = make_scores(rng, pos, decimals)
    t0 = time.perf_counter()
    store.ingest(
        {"item_id": np.arange(n), "score": scores, "label": labels},
        task="verification",
        run="global",
        git_commit=None,
    )
    ingest_s = time.perf_counter() - t0
    store.con.execute("checkpoint")  # the table as a later session finds it
    sql = ap_sql(store, run_id_of(store, "global"), "verification")
    t_sql, rows = best_of(repeat, sql)
    group = np.zeros(n, dtype=np.int64)
    t_np, (_, np_vals) = best_of(repeat, lambda: per_list("ap", group, scores, labels))
    from sklearn.metrics import average_precision_score

    t_sk, sk_val = best_of(repeat, lambda: average_precision_score(pos, scores))
    values = {"sql": float(rows[0][2]), "numpy": float(np_vals[0]), "sklearn": float(sk_val)}
    agree = max(values.values()) - min(values.values()) <= TOL
    return {
        "name": f"global list, {n:,} rows",
        "ingest": ingest_s,
        "sql": t_sql,
        "numpy": t_np,
        "sklearn": t_sk,
        "values": values,
        "agree": agree,
        "targets": (1.0, 4.0),
    }


def case_lists(
    store: Store, n_lists: int, per: int, decimals: int | None, repeat: int
) -> dict[str, Any]:
    rng = np.random.default_rng(2)
    n = n_lists * per
    pos = rng.random(n) < 0.05
    pos[np.arange(n_lists) * per + rng.integers(0, per, n_lists)] = True  # >= 1 per list
    labels = np.where(pos, 1, -1).astype(np.int8)
    scores = make_scores(rng, pos, decimals)
    group = np.repeat(np.arange(n_lists, dtype=np.int64), per)
    item = np.tile(np.arange(per, dtype=np.int64), n_lists)
    t0 = time.perf_counter()
    store.ingest(
        {"group_id": group, "item_id": item, "score": scores, "label": labels},
        task="retrieval",
        run="lists",
        git_commit=None,
    )
    ingest_s = time.perf_counter() - t0
    store.con.execute("checkpoint")
    run_id = run_id_of(store, "lists")
    t_sql, rows = best_of(repeat, ap_sql(store, run_id, "retrieval"))
    t_np, (np_groups, np_vals) = best_of(repeat, lambda: per_list("ap", group, scores, labels))
    from sklearn.metrics import average_precision_score

    y2, s2 = pos.reshape(n_lists, per), scores.reshape(n_lists, per)

    def sk_loop() -> np.ndarray:
        return np.array([average_precision_score(y2[i], s2[i]) for i in range(n_lists)])

    t_sk, sk_vals = best_of(repeat, sk_loop)
    t_eval, _ = best_of(repeat, lambda: evaluate(store, ["lists"], metrics=["ap"], recompute=True))
    sql_vals = np.full(n_lists, np.nan)
    for _, gid, value in rows:
        sql_vals[int(gid)] = np.nan if value is None else value
    assert np.array_equal(np_groups, np.arange(n_lists))
    means = {
        "sql": float(np.mean(sql_vals)),
        "numpy": float(np.mean(np_vals)),
        "sklearn": float(np.mean(sk_vals)),
    }
    per_list_diff = float(
        max(np.max(np.abs(sql_vals - np_vals)), np.max(np.abs(sk_vals - np_vals)))
    )
    agree = max(means.values()) - min(means.values()) <= TOL and per_list_diff <= TOL
    return {
        "name": f"{n_lists:,} lists x {per:,} items",
        "ingest": ingest_s,
        "sql": t_sql,
        "numpy": t_np,
        "sklearn": t_sk,
        "evaluate": t_eval,
        "values": means,
        "per_list_diff": per_list_diff,
        "agree": agree,
        "targets": (1.0, 5.0),
    }


HPATCHES_CHILD = r"""
import json, resource, sys, time
parquet, db, tmp, limit = sys.argv[1:5]
from evalstore import Store
from evalstore.evaluate import evaluate
t0 = time.perf_counter()
with Store(db) as store:
    store.con.execute(f"set memory_limit = '{limit}'")
    store.con.execute(f"set temp_directory = '{tmp}'")
    store.ingest(parquet, task="retrieval", run="hpatches", git_commit=None)
    t1 = time.perf_counter()
    ingest_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out = evaluate(store, ["hpatches"], metrics=["ap"])
    t2 = time.perf_counter()
    value = float(out["value"][0])
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"ingest": t1 - t0, "evaluate": t2 - t1, "ingest_peak": ingest_peak,
                  "peak": peak, "map": value}))
"""


def case_hpatches(
    work: Path, queries_n: int, items: int, memory_limit: str, decimals: int | None
) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    parquet = work / "hpatches.parquet"
    rng = np.random.default_rng(3)
    chunk = max(1, 10_000_000 // items)  # queries per written row group (~10 M rows)
    t0 = time.perf_counter()
    schema = pa.schema(
        [
            ("group_id", pa.int32()),
            ("item_id", pa.int32()),
            ("score", pa.float64()),
            ("label", pa.int8()),
        ]
    )
    with pq.ParquetWriter(parquet, schema) as writer:
        for q0 in range(0, queries_n, chunk):
            q = min(chunk, queries_n - q0)
            pos = rng.random(q * items) < 0.001
            pos[np.arange(q) * items + rng.integers(0, items, q)] = True
            writer.write_table(
                pa.table(
                    {
                        "group_id": np.repeat(np.arange(q0, q0 + q, dtype=np.int32), items),
                        "item_id": np.tile(np.arange(items, dtype=np.int32), q),
                        "score": make_scores(rng, pos, decimals),
                        "label": np.where(pos, 1, -1).astype(np.int8),
                    },
                    schema=schema,
                )
            )
    write_s = time.perf_counter() - t0
    spill = work / "spill"
    spill.mkdir()
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            HPATCHES_CHILD,
            str(parquet),
            str(work / "hp.duckdb"),
            str(spill),
            memory_limit,
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    got.update(
        name=f"{queries_n:,} queries x {items:,} items",
        rows=queries_n * items,
        write_parquet=write_s,
        db_bytes=(work / "hp.duckdb").stat().st_size,
    )
    return got


# ----------------------------------------------------------------------------- report


def report(case: dict[str, Any]) -> None:
    sql, npy, sk = case["sql"], case["numpy"], case["sklearn"]
    max_ratio, min_speedup = case["targets"]
    r1, r2 = sql / npy, sk / sql
    print(f"\n{case['name']}  (ingest {case['ingest']:.1f} s, not in the ratios)")
    print(f"  {'':28} {'seconds':>8}")
    print(f"  {'SQL metrics/ap':28} {sql:8.2f}")
    print(f"  {'NumPy per_list':28} {npy:8.2f}")
    print(f"  {'scikit-learn':28} {sk:8.2f}")
    if "evaluate" in case:
        print(f"  {'evaluate() (compute+cache)':28} {case['evaluate']:8.2f}")
    ok1 = "met" if r1 <= max_ratio else "NOT met"
    ok2 = "met" if r2 >= min_speedup else "NOT met"
    print(f"  SQL / NumPy    = {r1:5.2f}x   (target <= {max_ratio:.1f}x: {ok1})")
    print(f"  sklearn / SQL  = {r2:5.2f}x   (target >= {min_speedup:.1f}x: {ok2})")
    what = "AP" if "per_list_diff" not in case else "mean AP"
    for k, v in case["values"].items():
        print(f"  {what} {k:8} = {v:.15f}")
    extra = (
        f", largest per-list difference {case['per_list_diff']:.1e}"
        if "per_list_diff" in case
        else ""
    )
    print(f"  values agree to {TOL:g}: {'yes' if case['agree'] else 'NO'}{extra}")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--repeat", type=int, default=3, help="best of N runs (default 3)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every size (0.1 = quick)")
    ap.add_argument("--decimals", type=int, default=4, help="round scores (ties); -1 = no rounding")
    ap.add_argument("--rows", type=int, default=10_000_000, help="rows of the global list")
    ap.add_argument("--lists", type=int, default=10_000)
    ap.add_argument("--items", type=int, default=1_000, help="items per list")
    ap.add_argument("--only", choices=["global", "lists", "none"], help="run one case only")
    ap.add_argument("--hpatches", action="store_true", help="also run the 200 M-row case")
    ap.add_argument("--hpatches-queries", type=int, default=10_000)
    ap.add_argument("--hpatches-items", type=int, default=20_000)
    ap.add_argument("--memory-limit", default="10GB", help="DuckDB memory_limit (hpatches)")
    ap.add_argument("--workdir", type=Path, default=None, help="where the databases go")
    ap.add_argument(
        "--ap-sql",
        type=Path,
        default=None,
        help="time this AP query (same parameters and output) instead of sql/metrics/ap.sql, "
        "to try a change; evaluate() and --hpatches still use the repository's SQL",
    )
    args = ap.parse_args()
    if args.ap_sql is not None:
        AP_TEXT.append(args.ap_sql.read_text())
    decimals = None if args.decimals < 0 else args.decimals
    warnings.filterwarnings("ignore", module="sklearn")

    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        work = Path(tmp)
        print(
            f"best of {args.repeat}; scores rounded to {decimals} decimals; AP SQL: "
            f"{args.ap_sql or 'sql/metrics/ap.sql'}"
        )
        with Store(work / "bench.duckdb") as store:
            if args.only in (None, "global"):
                report(case_global(store, int(args.rows * args.scale), decimals, args.repeat))
                gc.collect()
            if args.only in (None, "lists"):
                n_lists = max(1, int(args.lists * args.scale))
                report(case_lists(store, n_lists, args.items, decimals, args.repeat))
        if args.hpatches:
            q = max(1, int(args.hpatches_queries * args.scale))
            hp = case_hpatches(work, q, args.hpatches_items, args.memory_limit, decimals)
            gib = 1024**3
            print(
                f"\nHPatches-size run: {hp['name']} ({hp['rows']:,} rows), "
                f"memory_limit {args.memory_limit}"
            )
            print(f"  write Parquet (not measured below) {hp['write_parquet']:8.1f} s")
            print(
                f"  Store.ingest                        {hp['ingest']:8.1f} s  "
                f"(peak RSS so far {hp['ingest_peak'] / gib:.2f} GiB)"
            )
            print(f"  evaluate(metrics=['ap'])            {hp['evaluate']:8.1f} s")
            print(f"  peak RSS of the process             {hp['peak'] / gib:8.2f} GiB")
            print(f"  database size                       {hp['db_bytes'] / 2**20:8.0f} MiB")
            print(f"  mAP = {hp['map']:.6f}")


if __name__ == "__main__":
    main()
