"""Where one ``evalstore compare`` of two runs of one list goes, phase by phase, in one process
(a profiling helper for bench/compare.py's ``--pairs`` figure; whole processes vary by 10-15%
with the load of the shared machine, the phases of one process much less).

    python bench/_compare_phases.py [--pairs 1200000] [--replicates 200] [--db PATH]
    PYTHONPATH=OLD_CHECKOUT python bench/_compare_phases.py --db PATH   # the code of another

Builds (or reuses, ``--db``) the store of bench/compare.py's ``--pairs`` mode, then times in CPU
seconds reading the items (``pairing._items``, as ``compare`` reads them), ranking the runs,
the layout and each run's order, and per replicate (ms): the draw of the multiplicities (its
Poisson counts and ``to_size`` apart) and each run's gather and pass. Run it alternately with
the code before and after a change.
"""

from __future__ import annotations

import argparse
import inspect
import sys
import time
from pathlib import Path

import numpy as np

from evalstore import Store
from evalstore.analysis import multiplicities, pairing
from evalstore.analysis.configurations import Unit
from evalstore.analysis.reweighting import Layout, RunOrder, list_values

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare as compare_bench

CPU = time.process_time
PHASES: dict[str, float] = {"poisson": 0.0, "to_size": 0.0}


def _timed(name: str, function):  # type: ignore[no-untyped-def]
    def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
        t = CPU()
        try:
            return function(*args, **kwargs)
        finally:
            PHASES[name] += CPU() - t

    return wrapper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1_200_000)
    parser.add_argument("--replicates", type=int, default=200)
    parser.add_argument("--db", type=Path, default=None, help="a store to build once and reuse")
    opts = parser.parse_args()
    db = opts.db or Path(f"/tmp/compare_phases_{opts.pairs}.duckdb")
    if not db.exists():
        compare_bench.build_pairs(db, opts.pairs)
    multiplicities.poisson = _timed("poisson", multiplicities.poisson)
    multiplicities.to_size = _timed("to_size", multiplicities.to_size)
    with Store(db) as store:
        a, b = (store.run(f"pv/{r}")["run_id"] for r in ("a", "b"))
        units = [Unit(r, "pv", "", (i,), (None,)) for r, i in (("a", a), ("b", b))]
        t = CPU()
        items = pairing._items(store, *units, "verification", [None], as_given=True, ids=False)
        print(f"read the items: {CPU() - t:.3f} CPU-s")
    t = CPU()
    ranked = [RunOrder.ranked(items, items.scores[r], "grouped") for r in (0, 1)]
    layout = Layout.of(items, ranked[0].rows)
    orders = [RunOrder.of(items, ranked[r], "grouped", layout) for r in (0, 1)]
    print(f"rank the runs, layout, orders: {CPU() - t:.3f} CPU-s")
    n_pos = np.array([float(np.sum(items.labels == 1))])
    n_neg = np.array([float(np.sum(items.labels == -1))])
    rng = np.random.default_rng(1)
    w = np.empty((1, layout.size), dtype=np.uint8)
    work = np.empty(w.size, dtype=np.bool_)
    # the draw's cumulative sums serve the first run's pass, as in the loop (code since dc77c0c)
    shares = "cums" in inspect.signature(layout.draw).parameters
    cums = np.zeros((2, layout.size + len(layout.strata)), dtype=np.int32)
    spent = dict.fromkeys(["draw", "gather a", "pass a", "gather b", "pass b"], 0.0)
    for _ in range(opts.replicates):
        t = CPU()
        drawn = (cums, layout.draw(rng, w, work, cums)) if shares else layout.draw(rng, w, work)
        spent["draw"] += CPU() - t
        for name, order in zip("ab", orders, strict=True):
            t = CPU()
            weights = order.weights(w)
            spent[f"gather {name}"] += CPU() - t
            t = CPU()
            list_values("ap", order, weights, n_pos, n_neg, *([drawn] if shares else []))
            spent[f"pass {name}"] += CPU() - t
    per = {k: v / opts.replicates * 1e3 for k, v in {**spent, **PHASES}.items()}
    total = sum(spent.values()) / opts.replicates * 1e3
    print(f"per replicate (ms, {opts.replicates} replicates): total {total:.2f}; "
          + ", ".join(f"{k} {v:.2f}" for k, v in per.items()))  # fmt: skip


if __name__ == "__main__":
    main()
