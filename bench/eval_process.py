"""Whole-process benchmark: ``evalstore eval RUN -m ap --recompute`` vs a scikit-learn script.

    python bench/eval_process.py [--rows 10000000] [--repeat 5] [--decimals -1]
                                 [--scores float32|float64]

Writes one verification list of ``--rows`` rows to Parquet (int32 item ids, scores N(0, 1),
+1 for the 30 % positives, as ``--scores`` (float32 or float64), not rounded unless
``--decimals``; int8 labels +1/-1) and ingests it once (not measured). Then runs, ``--repeat``
times each, alternated, each in a fresh process under ``/usr/bin/time -v``:

  - evalstore: the ``evalstore`` console script next to this interpreter,
    ``evalstore eval global -m ap --recompute --db DB --format json`` (start-up, opening the
    store, the query, caching the value, printing);
  - new file: ``evalstore ingest FILE -t verification`` into a new store, then
    ``evalstore eval global -m ap --format json`` on it: the first AP of a new file (two
    processes: CPU and wall summed, the larger peak). Target (issue 32, point 3): at most
    0.5x the reference's CPU;
  - reference: ``python -c`` that reads the score and label columns of the same Parquet file
    with pyarrow and prints ``sklearn.metrics.average_precision_score`` of them.

Prints the median CPU seconds (user + sys, all threads), wall seconds and peak memory of each,
their ratios and the two values (which must agree to 1e-9). Target: evalstore at least 4x
faster than the reference in CPU time.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from evalstore import Store

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _measure
from _measure import MIB, Measured, met

TARGET = 4.0  # reference CPU / evalstore CPU
NEW_TARGET = 0.5  # new file (ingest + eval) CPU / reference CPU
TOL = 1e-9
RUN = "global"

REFERENCE = (
    "import sys, pyarrow.parquet as pq; from sklearn.metrics import average_precision_score; "
    "t = pq.read_table(sys.argv[1], columns=['score', 'label']); "
    "print(repr(float(average_precision_score(t['label'].to_numpy() == 1, "
    "t['score'].to_numpy()))))"
)


def make_parquet(path: Path, rows: int, decimals: int | None, scores: str = "float32") -> None:
    rng = np.random.default_rng(1)
    pos = rng.random(rows) < 0.3
    score = rng.standard_normal(rows) + pos
    if decimals is not None:
        score = np.round(score, decimals)
    pq.write_table(
        pa.table(
            {
                "item_id": np.arange(rows, dtype=np.int32),
                "score": score.astype(scores),
                "label": np.where(pos, 1, -1).astype(np.int8),
            }
        ),
        path,
    )


def first_ap(evalstore: Path, parquet: Path, db: Path) -> Measured:
    """``evalstore ingest`` of ``parquet`` into the new store ``db``, then ``evalstore eval``
    of its AP: CPU and wall summed, the larger peak, the eval's stdout."""
    command = [str(evalstore), "ingest", str(parquet), "-t", "verification", "-r", RUN]
    ingest = _measure.run([*command, "--db", str(db), "--git-commit", "bench"])
    command = [str(evalstore), "eval", RUN, "-m", "ap", "--db", str(db), "--format", "json"]
    ev = _measure.run(command)
    db.unlink()
    return Measured(
        cpu=ingest.cpu + ev.cpu,
        wall=ingest.wall + ev.wall,
        peak_bytes=max(ingest.peak_bytes, ev.peak_bytes),
        stdout=ev.stdout,
    )


def ap_of(out: Measured) -> float:
    rows = json.loads(out.stdout)
    if isinstance(rows, dict):  # {"rows": [...]} or similar envelopes
        rows = next(v for v in rows.values() if isinstance(v, list))
    (row,) = [r for r in rows if r.get("metric") == "ap"]
    return float(row["value"])


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=5, help="runs of each (median; default 5)")
    ap.add_argument("--decimals", type=int, default=-1, help="round scores (-1: no rounding)")
    ap.add_argument("--scores", choices=["float32", "float64"], default="float32")
    ap.add_argument("--workdir", type=Path, default=None, help="where the files go")
    args = ap.parse_args()
    decimals = None if args.decimals < 0 else args.decimals
    evalstore = Path(sys.executable).parent / "evalstore"
    print(_measure.load_note())
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        work = Path(tmp)
        parquet, db = work / "global.parquet", work / "bench.duckdb"
        make_parquet(parquet, args.rows, decimals, args.scores)
        with Store(db) as store:
            store.ingest(parquet, task="verification", run=RUN, git_commit=None)
        command = [str(evalstore), "eval", RUN, "-m", "ap", "--recompute", "--db", str(db)]
        ours: list[Measured] = []
        ref: list[Measured] = []
        new: list[Measured] = []
        for i in range(args.repeat):
            ours.append(_measure.run([*command, "--format", "json"]))
            ref.append(_measure.python(REFERENCE, parquet))
            new.append(first_ap(evalstore, parquet, work / f"new-{i}.duckdb"))
    a, b, c = _measure.median(ours), _measure.median(ref), _measure.median(new)
    value_ours, value_ref = ap_of(ours[-1]), float(ref[-1].last_line())
    ratio = b.cpu / a.cpu
    print(
        f"one list of {args.rows:,} rows, {args.scores} scores "
        f"{'not rounded' if decimals is None else f'rounded to {decimals} decimals'}; "
        f"median of {args.repeat}, alternated"
    )
    print(f"  {'':44} {'CPU s':>7} {'wall s':>7} {'peak MiB':>9}")
    for name, m in (
        ("evalstore eval global -m ap --recompute", a),
        ("pyarrow + scikit-learn average_precision", b),
    ):
        print(f"  {name:44} {m.cpu:7.2f} {m.wall:7.2f} {m.peak_bytes / MIB:9.0f}")
    print(
        f"  reference / evalstore = {ratio:.2f}x CPU "
        f"(target >= {TARGET:.0f}x: {met(ratio >= TARGET)}), "
        f"{b.wall / a.wall:.2f}x wall, {b.peak_bytes / a.peak_bytes:.2f}x peak"
    )
    first = c.cpu / b.cpu
    print(
        f"  new file: evalstore ingest + eval -m ap      {c.cpu:7.2f} {c.wall:7.2f} "
        f"{c.peak_bytes / MIB:9.0f}"
    )
    print(
        f"  new file / reference = {first:.2f}x CPU (target <= {NEW_TARGET}x: "
        f"{met(first <= NEW_TARGET)}), {c.wall / b.wall:.2f}x wall, "
        f"{c.peak_bytes / b.peak_bytes:.2f}x peak"
    )
    agree = abs(value_ours - value_ref) <= TOL and abs(ap_of(new[-1]) - value_ref) <= TOL
    print(
        f"  AP evalstore = {value_ours:.15f}, scikit-learn = {value_ref:.15f} "
        f"(agree to {TOL:g}: {'yes' if agree else 'NO'})"
    )
    print(
        f"  every run, CPU s: evalstore {' '.join(f'{m.cpu:.2f}' for m in ours)}; "
        f"reference {' '.join(f'{m.cpu:.2f}' for m in ref)}; "
        f"new file {' '.join(f'{m.cpu:.2f}' for m in new)}"
    )
    print(_measure.load_note())


if __name__ == "__main__":
    main()
