"""The ``tied`` case of bench/ranking.py: one tied list, whole processes, every tie policy.

One verification list of ``rows`` rows (int32 ids, float32 scores N(0, 1) + 1 for the 30 %
positives, rounded to ``decimals`` decimals: a few hundred distinct scores; int8 labels +1/-1)
is written to Parquet. Each command runs in a fresh process under ``/usr/bin/time -v`` (CPU
seconds of all threads, peak memory), ``repeat`` times, medians:

  - reference: a ``python -c`` that reads the score and label columns with pyarrow and prints
    scikit-learn's ``average_precision_score`` (bench/eval_process.py's REFERENCE);
  - ``evalstore ingest FILE -r tied -t verification --db NEW.duckdb`` (a new store each time);
  - on the last store, for each tie policy (grouped, optimistic, pessimistic, input, docid),
    ``evalstore eval tied -m ap --ties POLICY --recompute --format json``, and the same for
    ``ndcg`` (grouped ties).

"whole" is ingest + eval: the first value of a new file, as a user waits for it. Target (issue
32, point 5): whole <= 0.5x the reference in CPU seconds, for every policy and ndcg. Values:
``ap`` under ``grouped`` must equal scikit-learn's, and under every policy the NumPy core's
``per_list("ap", ..., ties=POLICY)`` (docid: only up to DOCID_CHECK_ROWS rows, its order is
made by a Python sort of the ids' text), to 1e-9. With ``before`` (a checkout of older code,
as ranking.py's ``--before``), each eval also runs with that code on the same store, alternated,
and its CPU seconds and after / before are printed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import _measure
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from _measure import MIB, Measured, met

from evalstore.core.points import docid_order
from evalstore.core.ranking import per_list

POLICIES = ("grouped", "optimistic", "pessimistic", "input", "docid")
TARGET = 0.5  # whole process / reference, CPU
TOL = 1e-9
DOCID_CHECK_ROWS = 2_000_000
RUN = "tied"
REFERENCE = (
    "import sys, pyarrow.parquet as pq; from sklearn.metrics import average_precision_score; "
    "t = pq.read_table(sys.argv[1], columns=['score', 'label']); "
    "print(repr(float(average_precision_score(t['label'].to_numpy() == 1, "
    "t['score'].to_numpy()))))"
)


def _value(out: Measured, metric: str) -> float:
    rows = json.loads(out.stdout)
    if isinstance(rows, dict):
        rows = next(v for v in rows.values() if isinstance(v, list))
    (row,) = [r for r in rows if r.get("metric") == metric]
    return float(row["value"])


def run(
    work: Path, rows: int, decimals: int, repeat: int, before: Path | None = None
) -> dict[str, Any]:
    """Measure the case; returns what :func:`report` prints."""
    rng = np.random.default_rng(1)
    pos = rng.random(rows) < 0.3
    score = np.round(rng.standard_normal(rows) + pos, decimals).astype(np.float32)
    labels = np.where(pos, 1, -1).astype(np.int8)
    items = np.arange(rows, dtype=np.int32)
    parquet = work / "tied.parquet"
    pq.write_table(pa.table({"item_id": items, "score": score, "label": labels}), parquet)
    evalstore = str(Path(sys.executable).parent / "evalstore")
    ref: list[Measured] = []
    ingest: list[Measured] = []
    db = work / "tied-0.duckdb"
    for i in range(repeat):
        ref.append(_measure.python(REFERENCE, parquet))
        db = work / f"tied-{i}.duckdb"
        ingest_cmd = [evalstore, "ingest", str(parquet), "-r", RUN, "-t", "verification"]
        ingest.append(_measure.run([*ingest_cmd, "--db", str(db)]))
        if i < repeat - 1:
            db.unlink()
    evals: dict[tuple[str, str], list[Measured]] = {}
    old: dict[tuple[str, str], list[Measured]] = {}
    cases = [("ap", ties) for ties in POLICIES] + [("ndcg", "grouped")]
    for _ in range(repeat):
        for metric, ties in cases:
            command = [evalstore, "eval", RUN, "-m", metric, "--ties", ties, "--recompute"]
            command += ["--db", str(db), "--format", "json"]
            evals.setdefault((metric, ties), []).append(_measure.run(command))
            if before is not None:
                env = {"PYTHONPATH": str(before)}
                old.setdefault((metric, ties), []).append(_measure.run(command, env=env))
    sk = float(ref[-1].last_line())
    group = np.zeros(rows, dtype=np.int64)
    checks: dict[tuple[str, str], float | None] = {}
    for metric, ties in cases:
        got = _value(evals[(metric, ties)][-1], metric)
        if metric != "ap":
            checks[(metric, ties)] = None
            continue
        if ties == "docid" and rows > DOCID_CHECK_ROWS:
            checks[(metric, ties)] = None
            continue
        order = docid_order(items) if ties == "docid" else None
        want = float(per_list("ap", group, score, labels, ties=ties, order=order)[1][0])
        checks[(metric, ties)] = abs(got - want)
    return {
        "rows": rows,
        "distinct": int(np.unique(score).size),
        "reference": _measure.median(ref),
        "ingest": _measure.median(ingest),
        "evals": {k: _measure.median(v) for k, v in evals.items()},
        "before": {k: _measure.median(v) for k, v in old.items()},
        "values": {k: _value(v[-1], k[0]) for k, v in evals.items()},
        "sklearn": sk,
        "checks": checks,
        "repeat": repeat,
    }


def report(case: dict[str, Any]) -> None:
    ref, ing = case["reference"], case["ingest"]
    print(
        f"\ntied list, {case['rows']:,} rows ({case['distinct']:,} distinct scores), whole "
        f"processes, median of {case['repeat']}"
    )
    print(f"  {'':36} {'CPU s':>7} {'wall s':>7} {'peak MiB':>9}")
    print(f"  {'pyarrow + scikit-learn AP':36} {ref.cpu:7.2f} {ref.wall:7.2f} {_mib(ref):>9}")
    print(f"  {'evalstore ingest':36} {ing.cpu:7.2f} {ing.wall:7.2f} {_mib(ing):>9}")
    print(
        f"  {'eval -m M --ties T --recompute':36} {'CPU s':>7} {'whole':>7} {'/ ref':>7} "
        f"{'peak MiB':>9}  target <= {TARGET}x  value (check)"
    )
    for (metric, ties), m in case["evals"].items():
        whole = ing.cpu + m.cpu
        ratio = whole / ref.cpu
        diff = case["checks"][(metric, ties)]
        check = "" if diff is None else f" (|d| {diff:.1e}: {'ok' if diff <= TOL else 'NO'})"
        print(
            f"  {metric + ' ' + ties:36} {m.cpu:7.2f} {whole:7.2f} {ratio:6.2f}x {_mib(m):>9}  "
            f"{met(ratio <= TARGET):17}  {case['values'][(metric, ties)]:.15f}{check}"
        )
        old = case["before"].get((metric, ties))
        if old is not None:
            print(
                f"  {'  the same eval, --before code':36} {old.cpu:7.2f} "
                f"{ing.cpu + old.cpu:7.2f} {(ing.cpu + old.cpu) / ref.cpu:6.2f}x {_mib(old):>9}"
                f"  eval after / before = {m.cpu / old.cpu:.2f}x CPU"
            )
    ap = case["values"][("ap", "grouped")]
    agree = abs(ap - case["sklearn"]) <= TOL
    print(
        f"  ap grouped {ap:.15f}, scikit-learn {case['sklearn']:.15f} "
        f"(agree to {TOL:g}: {'yes' if agree else 'NO'})"
    )


def _mib(m: Measured) -> str:
    return f"{m.peak_bytes / MIB:.0f}"
