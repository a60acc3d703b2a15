"""``compare`` of two single-label classification runs over their shared samples.

    python bench/compare_classes.py [--samples 10000] [--classes 10] [--n-boot 1000]
                                    [--metric top1_accuracy --metric ece]

Ingests two runs of ``--samples`` samples over ``--classes`` classes into a new store
(softmax scores of standard normal logits, the true class's raised by 2.0 in run A and 2.1
in run B; not measured), then times, for each metric, ``compare`` of the two runs in this
process (CPU seconds, all threads): the metric's first evaluation of both runs, reading each
run as cells of its sample x class matrix, ``--n-boot`` replicates over the samples and as
many swaps (docs/statistics.md, "Single-label metrics over samples"). It is the cost of a
comparison of runs already stored, not of a new file. Prints each metric's CPU seconds,
``resampled`` and p-value.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from evalstore import Store
from evalstore.analysis.compare import compare


def rows(rng: np.random.Generator, truth: np.ndarray, classes: int, boost: float) -> dict:
    """A single-label run's rows: a list per class, an item per sample."""
    logits = rng.normal(size=(truth.size, classes))
    logits[np.arange(truth.size), truth] += boost
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    column = np.tile(np.arange(classes), truth.size)
    return {
        "group_id": [f"c{c}" for c in column],
        "item_id": np.repeat(np.arange(truth.size), classes),
        "score": p.ravel(),
        "label": np.where(column == np.repeat(truth, classes), 1, -1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--samples", type=int, default=10_000)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--metric", action="append", default=None)
    args = ap.parse_args()
    metrics = args.metric or ["top1_accuracy", "ece"]
    rng = np.random.default_rng(0)
    truth = rng.integers(0, args.classes, args.samples)
    with tempfile.TemporaryDirectory() as work, Store(Path(work) / "s.duckdb") as store:
        for run, boost in (("x/a", 2.0), ("x/b", 2.1)):
            store.ingest(rows(rng, truth, args.classes, boost), task="classification", run=run,
                         git_commit=None)  # fmt: skip
        print(f"{args.classes:,} classes x {args.samples:,} samples, {args.n_boot:,} replicates")
        for metric in metrics:
            c0 = time.process_time()
            found = compare(store, ["x/a", "x/b"], metrics=[metric], n_boot=args.n_boot)
            cpu = time.process_time() - c0
            row = found.to_dicts()[0]
            print(f"  {metric}: {cpu:.2f} CPU s, resampled {row['resampled']}, "
                  f"p {row['p_value']}")  # fmt: skip


if __name__ == "__main__":
    main()
