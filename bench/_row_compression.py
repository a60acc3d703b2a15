"""The row tables' declared compression (sql/schema/020_row_compression.sql), measured:

    python bench/_row_compression.py [--rows 10000000] [--repeat 3] [--workdir DIR]

For each kind of data (float32 N(0, 1) scores in lists that come list by list, the same
rounded to 2 decimals, the same rows interleaved (row i in list i mod lists), graded gains
0-4, text item ids, float64 scores random and rounded) and each declaration of the columns
(every method DuckDB's choice, as schema 19; schema 20's; schema 20's with one declaration
undone or another added), DuckDB's insert of the file's rows into a table of a row table's
columns and a checkpoint, into a new file, in this process: the median CPU seconds (user +
sys, every thread) of ``--repeat`` runs, the declarations alternated, and the file's size.
Then what schema 20's migration costs: its SQL run in one transaction, and a checkpoint, over
a file whose int/f32 row table (declared as schema 19 did) holds the random rows.

Ingest itself (the whole process against DuckDB's CTAS) is bench/ingest.py's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from evalstore.db.queries import load

COLUMNS = ("list_id", "item", "score", "label", "seq", "gain")
INTS = {"list_id": "bitpacking", "item": "bitpacking", "label": "bitpacking", "seq": "bitpacking"}
V20 = {"score": "alp", "gain": "alp"}  # score: float32 only (float64 left to DuckDB)
CONFIGS: dict[str, dict[str, str]] = {
    "schema 19 (all DuckDB's)": {},
    "schema 20": V20,
    "20, score DuckDB's": {"gain": "alp"},
    "20, gain DuckDB's": {"score": "alp"},
    "20, integers bitpacking": {**V20, **INTS},
    "20, list_id rle": {**V20, "list_id": "rle"},
}


def make_data(folder: Path, rows: int, lists: int) -> dict[str, tuple[Path, bool, bool, bool]]:
    """name -> (Parquet file, text ids, float32 scores, graded)."""
    rng = np.random.default_rng(0)
    per = rows // lists
    n = per * lists
    group = np.repeat(np.arange(lists, dtype=np.int32), per)
    item = np.tile(rng.permutation(per).astype(np.int32), lists)
    score = rng.standard_normal(n)
    label = np.where(rng.random(n) < 0.05, 1, -1).astype(np.int8)
    gain = rng.choice(5, n, p=[0.8, 0.08, 0.06, 0.04, 0.02]).astype(np.float64)
    interleaved = np.arange(n).reshape(lists, per).T.ravel()
    cases = {
        "random": (item, score.astype(np.float32), label, None, None),
        "tied (2 decimals)": (item, np.round(score, 2).astype(np.float32), label, None, None),
        "interleaved": (item, score.astype(np.float32), label, None, interleaved),
        "graded (gain 0-4)": (
            item,
            score.astype(np.float32),
            np.where(gain > 0, 1, -1),
            gain,
            None,
        ),
        "text ids": (item.astype(str), score.astype(np.float32), label, None, None),
        "float64": (item, score, label, None, None),
        "float64 tied": (item, np.round(score, 2), label, None, None),
    }
    found = {}
    for i, (name, (ids, scores, labels, gains, order)) in enumerate(cases.items()):
        columns = {"group_id": group, "item_id": ids, "score": scores, "label": labels}
        if gains is not None:
            columns["gain"] = gains
        table = pa.table({k: np.asarray(v) for k, v in columns.items()})
        if order is not None:
            table = table.take(pa.array(order))
        path = folder / f"{i}.parquet"
        pq.write_table(table, path)
        text, f32 = np.asarray(ids).dtype.kind == "U", np.asarray(scores).dtype == np.float32
        found[name] = (path, text, f32, gains is not None)
    return found


def ddl(table: str, text: bool, f32: bool, declared: dict[str, str]) -> str:
    types = {
        "list_id": "integer not null",
        "item": "varchar not null" if text else "integer not null",
        "score": "float" if f32 else "double",
        "label": "tinyint not null",
        "seq": "integer not null",
        "gain": "double",
    }
    if not f32:
        declared = {k: v for k, v in declared.items() if k != "score"}
    if text:
        declared = {k: v for k, v in declared.items() if k != "item"}
    parts = [
        f"{c} {types[c]}" + (f" using compression {declared[c]}" if c in declared else "")
        for c in COLUMNS
    ]
    return f"create table {table} ({', '.join(parts)})"


def insert_sql(table: str, parquet: Path, graded: bool) -> str:
    # the direct path's insert (sql/store/ingest.sql, insert_parquet); our own temporary file
    gain = "gain" if graded else "null"
    return (
        f"insert into {table} select group_id, item_id, score, label, "
        f"cast(file_row_number as integer), {gain} "
        f"from read_parquet('{parquet}', file_row_number = true)"
    )


def insert_once(
    db: Path, parquet: Path, text: bool, f32: bool, graded: bool, declared: dict[str, str]
) -> float:
    db.unlink(missing_ok=True)
    con = duckdb.connect(str(db))
    con.execute("set enable_progress_bar = false")
    con.execute(ddl("t", text, f32, declared))
    c0 = time.process_time()
    con.execute(insert_sql("t", parquet, graded))
    con.execute("checkpoint")
    cpu = time.process_time() - c0
    con.close()
    return cpu


def migration_once(db: Path, parquet: Path) -> tuple[float, int, int]:
    """CPU s of schema 20's SQL in a transaction and a checkpoint; file sizes before, after."""
    db.unlink(missing_ok=True)
    con = duckdb.connect(str(db))
    con.execute("set enable_progress_bar = false")
    for items in ("int", "text"):
        for scores in ("f32", "f64"):
            table = f"list_rows_{items}_{scores}"
            con.execute(ddl(table, items == "text", scores == "f32", {}))
    con.execute(insert_sql("list_rows_int_f32", parquet, False))
    con.close()
    before = db.stat().st_size
    con = duckdb.connect(str(db))
    c0 = time.process_time()
    con.execute("begin transaction")
    con.execute(load("schema/020_row_compression").text)
    con.execute("commit")
    con.execute("checkpoint")
    cpu = time.process_time() - c0
    con.close()
    return cpu, before, db.stat().st_size


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--lists", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=None, help="where the files go")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        work = Path(tmp)
        data = make_data(work, args.rows, args.lists)
        db = work / "t.duckdb"
        load1 = os.getloadavg()
        cpu: dict[tuple[str, str], list[float]] = {}
        size: dict[tuple[str, str], float] = {}
        for _ in range(args.repeat):
            for name, (parquet, text, f32, graded) in data.items():
                for config, declared in CONFIGS.items():
                    got = insert_once(db, parquet, text, f32, graded, declared)
                    cpu.setdefault((name, config), []).append(got)
                    size[(name, config)] = db.stat().st_size / 2**20
        migrations = [migration_once(db, data["random"][0]) for _ in range(args.repeat)]
        load2 = os.getloadavg()
    print(
        f"{args.rows:,} rows in {args.lists:,} lists; median of {args.repeat}, alternated; "
        f"load average {load1[0]:.1f} -> {load2[0]:.1f} on {os.cpu_count()} cores"
    )
    print(f"{'data':20} {'declared':26} {'CPU s':>6} {'MiB':>7}")
    for name in data:
        for config in CONFIGS:
            key = (name, config)
            print(f"{name:20} {config:26} {statistics.median(cpu[key]):6.2f} {size[key]:7.1f}")
    m = statistics.median(c for c, _, _ in migrations)
    _, before, after = migrations[0]
    print(
        f"schema 20 migration of {args.rows:,} int/f32 rows: {m:.2f} CPU s (median), "
        f"file {before / 2**20:.1f} -> {after / 2**20:.1f} MiB"
    )


if __name__ == "__main__":
    main()
