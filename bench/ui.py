"""UI benchmark: ``evalstore ui`` start-up on the demo store, and each page on 1,000 runs.

    python bench/ui.py [--runs 1000] [--repeat 5] [--keep DIR] [--quick-demo]

Builds (or, with ``--keep DIR``, reuses) the demo's store and a store of ``--runs`` runs of
every task (``bench/dashboard.py``'s store, metrics computed; at least 40, so that it holds
two HPatches runs to compare); ``--quick-demo`` builds the demo with ``evalstore demo --quick``
(a check that the script runs, not the figures of docs/benchmarks.md). Then:

  - **start-up**: ``evalstore ui --db DEMO --port 0`` in a fresh process, ``--repeat`` times:
    the wall seconds from the spawn until the runs page (``/``) has answered, beside
    ``evalstore runs --db DEMO`` (a command's whole life, the reference of the same run);
  - **pages**: one app on the large store; each page's first request, then the median of
    ``--repeat`` more, in wall seconds of a request as the browser makes it (HTTP on
    localhost, the whole HTML received): the runs (newest first, sorted by a value column,
    filtered by a ``where`` predicate, grouped into configurations), a comparison of two
    runs and of two configurations, the curves, the history, the per-list heatmaps and a SQL
    query.

Prints the figures and whether the targets hold: start-up under 2 s, every page (first
request or not) under 1 s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from evalstore import Store
from evalstore.ui import Running, launch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _measure
from dashboard import build

START_TARGET = 2.0  # seconds
PAGE_TARGET = 1.0  # seconds
MIN_RUNS = 40  # bench/dashboard.py's build makes runs // 20 HPatches runs; compare needs two


def start(db: Path) -> tuple[Running, float]:
    """Start the app; return it and the seconds from the spawn until ``/`` answered."""
    t0 = time.perf_counter()
    app = launch(db)
    get(app.url)
    return app, time.perf_counter() - t0


def get(url: str) -> float:
    """Seconds to fetch ``url`` whole; a page that is not 200 stops the benchmark."""
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as response:
        body = response.read()
        if response.status != 200 or b'<p class="error">' in body:
            raise SystemExit(f"{url}: {response.status}: {body[:300]!r}")
    return time.perf_counter() - t0


def stores(work: Path, runs: int, quick: bool = False) -> tuple[Path, Path]:
    demo, large = work / "demo.duckdb", work / "large.duckdb"
    if not demo.exists():
        quick_flag = ["--quick"] if quick else []
        _measure.run([sys.executable, "-m", "evalstore", "demo", "--db", str(demo),
                      "--out", str(work / "demo-out"), *quick_flag])  # fmt: skip
    kept = 0
    if large.exists():
        with Store(large, read_only=True) as store:
            kept = store.runs().height
    if kept != runs:
        large.unlink(missing_ok=True)
        t0 = time.perf_counter()
        with Store(large) as store:
            build(store, runs)
        print(f"store: {runs} runs built and evaluated in {time.perf_counter() - t0:.0f} s")
    return demo, large


def pages(db: Path) -> dict[str, str]:
    """The pages to time, with real run ids of the store."""
    with Store(db, read_only=True) as store:
        runs = store.runs()
        seeds = runs.filter(runs["experiment"] == "voc")["run_id"].to_list()
        hp = runs.filter(runs["experiment"] == "hpatches")["run_id"].to_list()
    return {
        "runs (newest first)": "",
        "runs sorted by a value": "?sort=retrieval+map&desc=1",
        "runs where param_lr > 0.01": "?where=param_lr+%3E+0.01",
        "configurations (mean ± sd)": "?group=1",
        "compare two runs": f"compare?unit={hp[0]}&unit={hp[1]}",
        "compare two configurations": f"compare?unit=g{seeds[0]}&unit=g{seeds[-1]}",
        "curves (8 newest per task)": "curves",
        "history (the first metric)": "history",
        "history (every metric)": "history?series=*",
        "per list (20 newest)": "lists",
        "sql": "sql?q=select+experiment%2C+count(*)+from+v_runs+group+by+all",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", type=Path, default=None)
    parser.add_argument("--quick-demo", action="store_true", help="evalstore demo --quick")
    opts = parser.parse_args()
    if opts.runs < MIN_RUNS:
        parser.error(f"--runs must be at least {MIN_RUNS} (two HPatches runs to compare)")
    with tempfile.TemporaryDirectory() as tmp:
        work = opts.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        demo, large = stores(work, opts.runs, opts.quick_demo)
        print(_measure.load_note())
        starts, references = [], []
        for _ in range(opts.repeat):
            app, took = start(demo)
            app.stop()
            starts.append(took)
            cli = [sys.executable, "-m", "evalstore", "runs", "--db", str(demo)]
            references.append(_measure.run(cli).wall)
        first = statistics.median(starts)
        print(f"start-up on the demo store, until / answered: {first:.2f} s wall (median of "
              f"{opts.repeat}); evalstore runs: {statistics.median(references):.2f} s; target "
              f"< {START_TARGET} s: {_measure.met(first < START_TARGET)}")  # fmt: skip
        app, _ = start(large)
        url = app.url
        try:
            worst = 0.0
            print(f"pages on {opts.runs} runs: the first request, then the median of "
                  f"{opts.repeat} more")  # fmt: skip
            for label, path in pages(large).items():
                first = get(url + path)
                took = statistics.median(get(url + path) for _ in range(opts.repeat))
                worst = max(worst, first, took)
                print(f"  {label}: {first:.3f} s, then {took:.3f} s")
            print(f"slowest page: {worst:.3f} s; target < {PAGE_TARGET} s: "
                  f"{_measure.met(worst < PAGE_TARGET)}")  # fmt: skip
        finally:
            app.stop()


if __name__ == "__main__":
    main()
