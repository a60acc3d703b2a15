"""HPatches-like retrieval at scale: ``map`` over 2e6, 2e7 and 2e8 rows against dense NumPy.

    python bench/hpatches_scale.py [--sizes 1000x2000,1000x20000,10000x20000]
                                   [--memory-limit 2GB] [--plot docs/img/hpatches_scale.png]
                                   [--json results.json] [--workdir /tmp]
                                   [--before /tmp/evalstore_before] [--from-json results.json]

For each QUERIES x ITEMS size, writes the lists to one Parquet file (int32 query and item ids,
float32 scores N(0, 1), +2 for the 5 positives of each query, 2 % of the other items ignored
(label 0, the query's own sequence), the rest distractors), then runs, each in a fresh process
under ``/usr/bin/time -v`` (CPU seconds of all threads, wall seconds, that process's own peak
memory):

  - ingest: ``Store.ingest(parquet, task="retrieval")`` into a new database;
  - eval: ``evaluate(store, [run], metrics=["ap"], recompute=True)``, the ``map`` of the query
    lists;

both with DuckDB's default settings (no memory limit: DuckDB takes 80 % of RAM) and with
``EVALSTORE_MEMORY_LIMIT`` = ``--memory-limit`` (a separate database; must finish, spilling to
``<db>.tmp``), and

  - with ``--before CHECKOUT``, ingest and eval again (default settings) with that checkout's
    evalstore first on the path (the code before a change);
  - reference: dense NumPy on the same Parquet file: the scores read into a (queries x items)
    float32 array and the labels into an int8 one (pyarrow, by their ids), then each row's AP
    from ``np.argsort(-scores, axis=1)`` over blocks of rows (about 16 M cells at a time): the
    labels in that order, running counts of positives and of non-ignored items along axis 1,
    the precision at each positive, summed per row over the row's positives. Ties are taken
    in the sort's order, not as groups; with float32 scores N(0, 1) ties are rare and the mean
    agrees with evalstore's ``map`` to about 1e-6 or better (printed).

Each of the evalstore processes also prints the CPU seconds of its work alone ("call CPU s": the
store opened and the one call, or the reference's reading and computing, without the
interpreter's start-up and imports).

Targets: eval peak memory at most 6 GiB with default settings; eval CPU time at most 1.5x the
reference's (whole process each, reading the Parquet file included in the reference). Also
prints ingest + eval against the reference (what a first evaluation costs), and a table of how
CPU time, wall time and peak memory grow from the least to the largest size. ``--plot`` draws
both against rows with plotly (HTML; a PNG through headless Chromium when ``chromium`` is on
PATH). Each size's files are deleted before the next is written.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _measure
from _measure import GIB, Measured, met

EVAL_PEAK_TARGET = 6 * GIB
EVAL_CPU_TARGET = 1.5  # times the dense NumPy reference
POSITIVES = 5
IGNORED = 0.02

CHILD = r"""
import json, sys, time
from evalstore import Store, evaluate
kind, db, parquet = sys.argv[1:4]
c0, w0 = time.process_time(), time.perf_counter()
with Store(db) as store:
    if kind == "ingest":
        store.ingest(parquet, task="retrieval", run="hpatches/scale", git_commit=None)
        out = {}
    else:
        frame = evaluate(store, ["hpatches/scale"], metrics=["ap"], recompute=True)
        out = {"map": float(frame["value"][0]), "n_lists": int(frame["n_lists"][0])}
out.update(call_cpu=time.process_time() - c0, call_wall=time.perf_counter() - w0)
print(json.dumps(out))
"""

REFERENCE = r"""
import json, sys, time
import numpy as np
import pyarrow.parquet as pq
c0 = time.process_time()
parquet, queries, items = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
score = np.full((queries, items), -np.inf, np.float32)
label = np.zeros((queries, items), np.int8)
for batch in pq.ParquetFile(parquet).iter_batches(batch_size=1 << 22):
    q = batch.column("group_id").to_numpy()
    i = batch.column("item_id").to_numpy()
    score[q, i] = batch.column("score").to_numpy()
    label[q, i] = batch.column("label").to_numpy()
ap = np.full(queries, np.nan)
block = max(1, (1 << 24) // items)
for r0 in range(0, queries, block):
    order = np.argsort(-score[r0:r0 + block], axis=1)
    lab = np.take_along_axis(label[r0:r0 + block], order, axis=1)
    del order
    pos = lab == 1
    n = np.cumsum(lab != 0, axis=1, dtype=np.int32)
    tp = np.cumsum(pos, axis=1, dtype=np.int32)
    rows, cols = np.nonzero(pos)
    prec = tp[rows, cols] / n[rows, cols]
    n_pos = np.bincount(rows, minlength=lab.shape[0])
    total = np.bincount(rows, weights=prec, minlength=lab.shape[0])
    with np.errstate(invalid="ignore", divide="ignore"):
        ap[r0:r0 + block] = np.where(n_pos > 0, total / n_pos, np.nan)
print(json.dumps({"map": float(np.nanmean(ap)), "call_cpu": time.process_time() - c0}))
"""


def write_lists(path: Path, queries: int, items: int, seed: int = 0) -> int:
    """Write ``queries`` lists of ``items`` rows; returns the number of rows."""
    rng = np.random.default_rng(seed)
    schema = pa.schema(
        [
            ("group_id", pa.int32()),
            ("item_id", pa.int32()),
            ("score", pa.float32()),
            ("label", pa.int8()),
        ]
    )
    chunk = max(1, 5_000_000 // items)  # queries per row group
    rows = 0
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, queries, chunk):
            q = min(chunk, queries - start)
            group = np.repeat(np.arange(start, start + q, dtype=np.int32), items)
            item = np.tile(np.arange(items, dtype=np.int32), q)
            label = np.full(group.size, -1, dtype=np.int8)
            # POSITIVES distinct items per query
            slot = np.argpartition(rng.random((q, items)), POSITIVES, axis=1)[:, :POSITIVES]
            label[(np.arange(q)[:, None] * items + slot).ravel()] = 1
            ignored = rng.random(group.size) < IGNORED
            label[ignored & (label != 1)] = 0
            score = (rng.standard_normal(group.size) + 2.0 * (label == 1)).astype(np.float32)
            writer.write_table(
                pa.table(
                    {"group_id": group, "item_id": item, "score": score, "label": label},
                    schema=schema,
                )
            )
            rows += group.size
    return rows


def child(
    kind: str, db: Path, parquet: Path, limit: str | None, code: Path | None = None
) -> tuple[Measured, dict]:
    got = _measure.python(
        CHILD, kind, db, parquet, env={"EVALSTORE_MEMORY_LIMIT": limit}, pythonpath=code
    )
    return got, json.loads(got.last_line())


def one_size(
    work: Path, queries: int, items: int, limit: str, before: Path | None = None
) -> dict[str, Any]:
    parquet = work / "lists.parquet"
    t0 = time.perf_counter()
    rows = write_lists(parquet, queries, items)
    made = time.perf_counter() - t0
    out: dict[str, Any] = {
        "queries": queries,
        "items": items,
        "rows": rows,
        "write_s": made,
        "parquet_bytes": parquet.stat().st_size,
        "load": _measure.load_note(),
    }
    settings: list[tuple[str, str | None, Path | None]] = [
        ("default", None, None),
        ("limited", limit, None),
    ]
    if before is not None:
        settings.append(("before", None, before))
    for setting, value, code in settings:
        db = work / f"{setting}.duckdb"
        ingest, ingest_got = child("ingest", db, parquet, value, code)
        ev, got = child("eval", db, parquet, value, code)
        out[setting] = {
            "ingest": {**vars_of(ingest), "call_cpu": ingest_got["call_cpu"]},
            "eval": {**vars_of(ev), "call_cpu": got["call_cpu"]},
            "db_bytes": db.stat().st_size,
            "map": got["map"],
            "n_lists": got["n_lists"],
        }
        db.unlink()
        shutil.rmtree(work / f"{setting}.duckdb.tmp", ignore_errors=True)
    ref = _measure.python(REFERENCE, parquet, queries, items)
    got = json.loads(ref.last_line())
    out["reference"] = {**vars_of(ref), "map": got["map"], "call_cpu": got["call_cpu"]}
    parquet.unlink()
    return out


def vars_of(m: Measured) -> dict[str, float]:
    return {"cpu": m.cpu, "wall": m.wall, "peak_bytes": m.peak_bytes}


# ----------------------------------------------------------------------------- report


def report_size(r: dict[str, Any], limit: str) -> None:
    d, lim, ref = r["default"], r["limited"], r["reference"]
    print(
        f"\n{r['rows']:,} rows ({r['queries']:,} queries x {r['items']:,} items); Parquet "
        f"{r['parquet_bytes'] / 2**20:,.0f} MiB written in {r['write_s']:.0f} s; {r['load']}"
    )
    print(f"  {'':34} {'CPU s':>8} {'wall s':>8} {'peak GiB':>9} {'call CPU s':>11}")
    rows = [
        ("ingest (default)", d["ingest"]),
        ("eval map (default)", d["eval"]),
        (f"ingest (memory limit {limit})", lim["ingest"]),
        (f"eval map (memory limit {limit})", lim["eval"]),
        ("NumPy dense reference", ref),
    ]
    if "before" in r:
        rows[4:4] = [
            ("ingest (code before list index)", r["before"]["ingest"]),
            ("eval map (code before list index)", r["before"]["eval"]),
        ]
    for name, m in rows:
        call = f"{m['call_cpu']:11.2f}" if "call_cpu" in m else f"{'':11}"
        print(f"  {name:34} {m['cpu']:8.1f} {m['wall']:8.1f} {m['peak_bytes'] / GIB:9.2f} {call}")
    print(
        f"  database {d['db_bytes'] / GIB:.2f} GiB; map = {d['map']:.9f} over "
        f"{d['n_lists']:,} queries (memory limit: {lim['map']:.9f}); "
        f"reference {ref['map']:.9f} (difference {abs(ref['map'] - d['map']):.1e})"
    )
    if "before" in r:
        b = r["before"]
        first_after = d["ingest"]["cpu"] + d["eval"]["cpu"]
        first_before = b["ingest"]["cpu"] + b["eval"]["cpu"]
        print(
            f"  before the list index: map = {b['map']:.9f}, database {b['db_bytes'] / GIB:.2f} "
            f"GiB; ingest after / before = {d['ingest']['cpu'] / b['ingest']['cpu']:.2f}x CPU, "
            f"eval after / before = {d['eval']['cpu'] / b['eval']['cpu']:.2f}x CPU, "
            f"ingest + eval after / before = {first_after / first_before:.2f}x CPU"
        )
    ratio = d["eval"]["cpu"] / ref["cpu"]
    first = (d["ingest"]["cpu"] + d["eval"]["cpu"]) / ref["cpu"]
    print(
        f"  eval peak {d['eval']['peak_bytes'] / GIB:.2f} GiB "
        f"(target <= {EVAL_PEAK_TARGET / GIB:.0f} GiB: "
        f"{met(d['eval']['peak_bytes'] <= EVAL_PEAK_TARGET)})"
    )
    print(
        f"  eval CPU / reference CPU = {ratio:.2f}x "
        f"(target <= {EVAL_CPU_TARGET:.1f}x: {met(ratio <= EVAL_CPU_TARGET)}); "
        f"ingest + eval / reference = {first:.2f}x; "
        f"wall: eval {d['eval']['wall'] / ref['wall']:.2f}x, "
        f"ingest + eval {(d['ingest']['wall'] + d['eval']['wall']) / ref['wall']:.2f}x"
    )


def report_growth(results: list[dict[str, Any]], limit: str) -> None:
    lo, hi = results[0], results[-1]
    print(
        f"\ngrowth from {lo['rows']:,} to {hi['rows']:,} rows "
        f"({hi['rows'] / lo['rows']:.0f}x rows):"
    )
    head = "".join(f" {r['rows']:>10.0e}" for r in results)
    print(f"  {'':34} {'':8}{head} {'growth':>8}")
    series = [
        ("ingest (default)", lambda r: r["default"]["ingest"]),
        ("eval map (default)", lambda r: r["default"]["eval"]),
        (f"ingest ({limit})", lambda r: r["limited"]["ingest"]),
        (f"eval map ({limit})", lambda r: r["limited"]["eval"]),
        ("NumPy dense reference", lambda r: r["reference"]),
    ]
    for name, get in series:
        for key, unit, scale in (
            ("cpu", "CPU s", 1),
            ("wall", "wall s", 1),
            ("peak_bytes", "GiB", GIB),
        ):
            vals = [get(r)[key] / scale for r in results]
            cells = "".join(f" {v:10.2f}" for v in vals)
            print(f"  {name:34} {unit:8}{cells} {vals[-1] / vals[0]:7.1f}x")


# ----------------------------------------------------------------------------- plot


def plot(results: list[dict[str, Any]], limit: str, path: Path) -> str:
    """Write CPU seconds and peak memory against rows to ``path`` (``.html``, or ``.png``
    through headless Chromium); returns what was written."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    rows = [r["rows"] for r in results]
    series = [
        ("ingest", lambda r: r["default"]["ingest"], "#1f77b4", "solid"),
        ("eval (map)", lambda r: r["default"]["eval"], "#d62728", "solid"),
        (f"ingest, limit {limit}", lambda r: r["limited"]["ingest"], "#1f77b4", "dot"),
        (f"eval, limit {limit}", lambda r: r["limited"]["eval"], "#d62728", "dot"),
        ("NumPy dense reference", lambda r: r["reference"], "#2ca02c", "dash"),
    ]
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=("CPU seconds (all threads)", "peak memory (GiB)")
    )
    for col, key, scale in ((1, "cpu", 1.0), (2, "peak_bytes", GIB)):
        for name, get, colour, dash in series:
            fig.add_trace(
                go.Scatter(
                    x=rows,
                    y=[get(r)[key] / scale for r in results],
                    name=name,
                    mode="lines+markers",
                    line={"color": colour, "dash": dash},
                    showlegend=col == 1,
                    legendgroup=name,
                ),
                row=1,
                col=col,
            )
        fig.update_xaxes(
            type="log",
            title_text="rows",
            tickvals=rows,
            ticktext=[f"{r:.0e}".replace("e+0", "e") for r in rows],
            row=1,
            col=col,
        )
        ticks = [m * 10.0**e for e in range(-2, 4) for m in (1, 2, 5)]
        fig.update_yaxes(
            type="log", tickvals=ticks, ticktext=[f"{t:g}" for t in ticks], row=1, col=col
        )
    fig.update_layout(
        title="evalstore ingest and eval (map) vs dense NumPy, HPatches-like lists",
        width=1000,
        height=600,
        template="plotly_white",
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        html = path.with_suffix(".html") if path.suffix == ".html" else Path(tmp) / "plot.html"
        fig.write_html(
            html,
            include_plotlyjs=True,
            full_html=True,
            div_id="hpatches-scale",
            config={"displayModeBar": False},
        )
        if path.suffix == ".html":
            return str(html)
        chromium = shutil.which("chromium")
        if chromium is None:
            raise SystemExit("no chromium on PATH: pass --plot FILE.html")
        subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",  # as root in a container
                "--hide-scrollbars",
                f"--screenshot={path}",
                "--window-size=1000,600",
                str(html),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
    return str(path)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--sizes",
        default="1000x2000,1000x20000,10000x20000",
        help="QUERIESxITEMS, comma-separated (default 2e6, 2e7, 2e8 rows)",
    )
    ap.add_argument("--memory-limit", default="2GB", help="the limited runs' memory limit")
    ap.add_argument("--workdir", default=None, help="where to put the data (default: a temp dir)")
    ap.add_argument(
        "--before",
        type=Path,
        default=None,
        help="also ingest and eval with the evalstore of this checkout (default settings), "
        "e.g. the code before the list index",
    )
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    ap.add_argument("--from-json", type=Path, default=None, help="report (and plot) these")
    ap.add_argument("--plot", type=Path, default=None, help="draw the figure (.png or .html)")
    args = ap.parse_args()
    if args.from_json is not None:
        results = json.loads(args.from_json.read_text())
    else:
        sizes = [tuple(int(x) for x in s.split("x")) for s in args.sizes.split(",")]
        results = []
        for queries, items in sizes:
            with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
                results.append(one_size(Path(tmp), queries, items, args.memory_limit, args.before))
            report_size(results[-1], args.memory_limit)
            if args.json is not None:
                args.json.write_text(json.dumps(results, indent=1))
    if args.from_json is not None:
        for r in results:
            report_size(r, args.memory_limit)
    if len(results) > 1:
        report_growth(results, args.memory_limit)
    if args.plot is not None:
        print(f"\nplot: {plot(results, args.memory_limit, args.plot)}")


if __name__ == "__main__":
    main()
