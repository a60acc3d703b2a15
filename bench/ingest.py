"""Ingest benchmark: ``evalstore ingest`` vs DuckDB's own CREATE TABLE AS over the same file.

    python bench/ingest.py [--rows 10000000] [--lists 10000] [--repeat 3]
                           [--format parquet|csv] [--ids int|text] [--scores float32|float64]

Writes a file (``--format``: Parquet, or CSV for DuckDB's read_csv; int32 group ids; item ids
int32 or text ``--ids``; scores N(0, 1) as ``--scores``; int8 labels, 5 % positives), then,
each in a fresh process and into a fresh database file, the two alternated, measures under
``/usr/bin/time -v``:
  - reference: ``create table t as select * from read_parquet(...)`` (or ``read_csv``) in
    DuckDB, in ``python -c`` (its start-up and ``import duckdb`` included);
  - evalstore: the console script, ``evalstore ingest FILE -t retrieval -r bench --db NEW``
    (start-up, validation, order column, duplicate check, list index, one new store);
  - evalstore (the library): ``Store.ingest`` of the file in ``python -c``, which also times
    its work alone, after its imports.
the CPU seconds (user + sys, all threads), wall seconds and peak memory (maximum resident set
size) of each whole process, the least of ``--repeat`` runs each, and the work alone of the
two ``python -c`` processes. Prints them, the ratios and the size of each database file.

Targets (issue 32, point 2): the ``evalstore ingest`` process at most 2x the reference in CPU
and in peak memory for Parquet, 1.5x for CSV.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _measure
from _measure import MIB, Measured, met

TARGET = {"parquet": 2.0, "csv": 1.5}

CSV_CHILD = r"""
import json, sys, time
kind, path, db = sys.argv[1:4]
import duckdb
c0, w0 = time.process_time(), time.perf_counter()
con = duckdb.connect(db)
con.execute("set enable_progress_bar = false")
# a table function takes no bound parameter; the path is our own temporary file
con.execute("create table t as select * from read_csv('" + path + "')")
con.close()
print(json.dumps({"cpu": time.process_time() - c0, "wall": time.perf_counter() - w0}))
"""
"""``python -c CSV_CHILD duckdb CSV DB``: DuckDB's read_csv CTAS, as INGEST_CHILD's for Parquet."""


def make_file(path: Path, rows: int, lists: int, ids: str, scores: str) -> None:
    rng = np.random.default_rng(0)
    per = rows // lists
    item = np.tile(rng.permutation(per).astype(np.int32), lists)
    table = pa.table(
        {
            "group_id": np.repeat(np.arange(lists, dtype=np.int32), per),
            "item_id": item if ids == "int" else pa.array(item.astype(str)),
            "score": rng.standard_normal(per * lists).astype(scores),
            "label": np.where(rng.random(per * lists) < 0.05, 1, -1).astype(np.int8),
        }
    )
    if path.suffix == ".csv":
        pcsv.write_csv(table, path)
    else:
        pq.write_table(table, path)


def measure(
    data: Path, work: Path, repeat: int
) -> dict[str, tuple[Measured, tuple[float, float] | None, int]]:
    """Per kind: the least CPU, wall and peak of its processes, the least CPU and wall of the
    work alone (None: not timed apart), and its database size."""
    evalstore = Path(sys.executable).parent / "evalstore"
    got: dict[str, list[Measured]] = {"duckdb": [], "evalstore": [], "evalstore ingest": []}
    size: dict[str, int] = {}
    for i in range(repeat):
        for kind, runs in got.items():
            db = work / f"{kind}-{i}.duckdb"
            if kind == "duckdb" and data.suffix == ".csv":
                runs.append(_measure.python(CSV_CHILD, kind, data, db))
            elif kind == "evalstore ingest":
                command = [str(evalstore), "ingest", str(data), "-t", "retrieval"]
                command += ["-r", "bench", "--db", str(db), "--git-commit", "bench"]
                runs.append(_measure.run(command))
            else:
                runs.append(_measure.python(_measure.INGEST_CHILD, kind, data, db, "retrieval"))
            size[kind] = db.stat().st_size
            db.unlink()
    return {
        kind: (
            _measure.best(runs),
            None if kind == "evalstore ingest" else _measure.inner(runs),
            size[kind],
        )
        for kind, runs in got.items()
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--lists", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--format", choices=["parquet", "csv"], default="parquet")
    ap.add_argument("--ids", choices=["int", "text"], default="int", help="item ids")
    ap.add_argument("--scores", choices=["float32", "float64"], default="float32")
    ap.add_argument("--workdir", type=Path, default=None, help="where the files go")
    args = ap.parse_args()
    print(_measure.load_note())
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        work = Path(tmp)
        data = work / f"scores.{args.format}"
        make_file(data, args.rows, args.lists, args.ids, args.scores)
        got = measure(data, work, args.repeat)
    ref, _, ref_size = got["duckdb"]
    ours, _, our_size = got["evalstore ingest"]
    lib = got["evalstore"][0]
    target = TARGET[args.format]
    print(
        f"rows: {args.rows:,} in {args.lists:,} lists, {args.format}, {args.ids} item ids, "
        f"{args.scores} scores; best of {args.repeat}, alternated"
    )
    print("evalstore: Store.ingest in python -c; evalstore ingest: the console script")
    print(f"{'':16} {'work alone':>15} {'whole process':>15}")
    print(
        f"{'':16} {'CPU s':>7} {'wall s':>7} {'CPU s':>7} {'wall s':>7} {'peak MiB':>9} "
        f"{'db MiB':>8}"
    )
    for name, (m, alone, size) in got.items():
        cpu, wall = (f"{v:7.2f}" for v in alone) if alone else (f"{'-':>7}", f"{'-':>7}")
        print(
            f"{name:16} {cpu} {wall} {m.cpu:7.2f} {m.wall:7.2f} "
            f"{m.peak_bytes / MIB:9.0f} {size / MIB:8.1f}"
        )
    print(
        f"time ratio evalstore/duckdb, whole process: {lib.wall / ref.wall:.2f}x wall, "
        f"{lib.cpu / ref.cpu:.2f}x CPU"
    )
    print(f"peak ratio evalstore/duckdb: {lib.peak_bytes / ref.peak_bytes:.2f}x")
    cpu_ratio, peak_ratio = ours.cpu / ref.cpu, ours.peak_bytes / ref.peak_bytes
    print(
        f"time ratio evalstore ingest/duckdb, whole process: {ours.wall / ref.wall:.2f}x wall, "
        f"{cpu_ratio:.2f}x CPU (target <= {target}x: {met(cpu_ratio <= target)})"
    )
    print(
        f"peak ratio evalstore ingest/duckdb: {peak_ratio:.2f}x "
        f"(target <= {target}x: {met(peak_ratio <= target)})"
    )
    print(f"size ratio evalstore/duckdb: {our_size / ref_size:.2f}x")
    print(_measure.load_note())


if __name__ == "__main__":
    main()
