"""Many writers and readers on one store: what the staging ingest holds the lock for.

    python bench/writers.py [--rows 10000000] [--writers 8] [--writer-rows 1000000]

1. One ingest of ``--rows`` ranked rows (1,000 items a list, float64 scores, 10 % positives)
   through the staging path, in this process, timed in its two phases: the staging (reading,
   checks, sorting and the list index, in the private staging store; the store is free) and
   the merge (the only time the store is locked). Meanwhile another thread starts
   ``evalstore runs`` processes back to back and records when each started and ended: the
   longest answer, and for the answers that had to wait for the merge, how long after the
   lock was free each came (the target: within 2 s).
2. The same rows ingested directly (``Store.ingest`` on the open store, the lock held all
   along), in a fresh process each, against the staging CLI: what the staging costs.
3. ``--writers`` ``evalstore ingest`` processes of ``--writer-rows`` rows each, started at
   once on one store: whether all succeed without a retry, every row once, and the wall time
   against the same ingests one after another.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import duckdb
import numpy as np
import polars as pl

from evalstore import Store
from evalstore.store.facade import write_store
from evalstore.store.staging import merge_staged, staging_path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _measure

CLI = [sys.executable, "-m", "evalstore"]


def make(path: Path, rows: int, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    items = 1000
    lists = rows // items
    pl.DataFrame(
        {
            "group_id": np.repeat(np.arange(lists, dtype=np.int32), items),
            "item_id": np.tile(np.arange(items, dtype=np.int32), lists),
            "score": rng.random(lists * items),
            "label": np.where(rng.random(lists * items) < 0.1, 1, -1).astype(np.int8),
        }
    ).write_parquet(path)
    return path


def readers(db: Path, stop: threading.Event, log: list[tuple[float, float]]) -> None:
    while not stop.is_set():
        start = time.monotonic()
        subprocess.run([*CLI, "runs", "--db", str(db), "--lock-timeout", "600"],
                       capture_output=True, check=True)  # fmt: skip
        log.append((start, time.monotonic()))


def phases(work: Path, data: Path) -> None:
    db = work / "phases.duckdb"
    with Store(db) as store:
        store.ingest(make(work / "seed.parquet", 10_000), task="retrieval", run="e/seed",
                     git_commit=None)  # fmt: skip
    stop, log = threading.Event(), []
    thread = threading.Thread(target=readers, args=(db, stop, log))
    thread.start()
    time.sleep(2.0)  # readers running before the ingest starts
    t0 = time.monotonic()
    stage = staging_path(db)
    try:
        with Store(stage) as staging:
            staging.ingest(str(data), task="retrieval", run="e/big", git_commit=None)
            staging.con.execute("checkpoint")
        t1 = time.monotonic()
        write_store(db, lambda s: merge_staged(s, stage, replace=False), lock_timeout=600)
        t2 = time.monotonic()
    finally:
        for p in (stage, stage.with_name(stage.name + ".wal")):
            p.unlink(missing_ok=True)
    time.sleep(2.0)
    stop.set()
    thread.join()
    waited = [end - t2 for start, end in log if start < t2 and end > t1 + 0.05]
    during = [end - start for start, end in log if start < t2 and end > t0]
    print(
        f"staging {t1 - t0:.2f} s (store free), merge {t2 - t1:.2f} s (store locked): the lock "
        f"is held {100 * (t2 - t1) / (t2 - t0):.0f} % of the ingest"
    )
    print(
        f"`evalstore runs` during the ingest: {len(during)} answers, longest {max(during):.2f} s; "
        f"answers that waited for the merge came {', '.join(f'{w:.2f}' for w in waited) or '-'}"
        " s after the lock was free"
    )


def cost(work: Path, data: Path, repeat: int) -> None:
    direct_code = (
        "import sys; from evalstore import Store\n"
        "with Store(sys.argv[1]) as s:\n"
        "    s.ingest(sys.argv[2], task='retrieval', run='e/x', git_commit=None)\n"
    )
    got: dict[str, list[_measure.Measured]] = {"direct": [], "staged": []}
    for k in range(repeat):
        for kind in got:
            db = work / f"{kind}{k}.duckdb"
            argv = (
                [sys.executable, "-c", direct_code, str(db), str(data)]
                if kind == "direct"
                else [
                    *CLI,
                    "ingest",
                    str(data),
                    "--task",
                    "retrieval",
                    "--run",
                    "e/x",
                    "--db",
                    str(db),
                    "--git-commit",
                    "x",
                ]
            )
            got[kind].append(_measure.run(argv))
            db.unlink()
    med = {k: _measure.median(v) for k, v in got.items()}
    print(
        f"ingest, whole process, median of {repeat}: direct (the lock held all along) "
        f"{med['direct'].cpu:.2f} CPU s / {med['direct'].wall:.2f} s wall; staged "
        f"{med['staged'].cpu:.2f} / {med['staged'].wall:.2f}: "
        f"{med['staged'].cpu / med['direct'].cpu:.2f}x CPU, "
        f"{med['staged'].wall / med['direct'].wall:.2f}x wall"
    )


def writers(work: Path, n: int, rows: int) -> None:
    data = make(work / "w.parquet", rows, seed=1)

    def argv(db: Path, k: int) -> list[str]:
        return [*CLI, "ingest", str(data), "--task", "retrieval", "--run", f"e/w{k}",
                "--db", str(db), "--git-commit", "x"]  # fmt: skip

    db = work / "many.duckdb"
    t0 = time.monotonic()
    jobs = [subprocess.Popen(argv(db, k), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True) for k in range(n)]  # fmt: skip
    failed = [job.communicate()[1] for job in jobs if job.wait() != 0]
    together = time.monotonic() - t0
    con = duckdb.connect(str(db), read_only=True)
    runs, stored = con.sql("select count(*), (select count(*) from scores) from runs").fetchall()[0]
    con.close()
    one = work / "one.duckdb"
    t0 = time.monotonic()
    for k in range(n):
        subprocess.run(argv(one, k), capture_output=True, check=True)
    alone = time.monotonic() - t0
    print(
        f"{n} ingests of {rows:,} rows at once: {n - len(failed)} of {n} succeeded, {runs} runs "
        f"and {stored:,} rows stored (of {n * rows:,}); {together:.1f} s wall, against "
        f"{alone:.1f} s one after another"
    )
    for message in failed:
        print("  failed:", message.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--writer-rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = make(work / "big.parquet", args.rows)
        phases(work, data)
        cost(work, data, args.repeat)
        writers(work, args.writers, args.writer_rows)


if __name__ == "__main__":
    main()
