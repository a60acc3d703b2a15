"""Determinism: the same rows give the same bits on every recompute.

Floating-point addition is not associative, so a sum whose terms DuckDB combines in an order
that depends on its threads (the partial states of a parallel aggregate) moves by an ULP or
two between recomputations; `compare` of two runs with byte-identical rows then reported wins
and losses. The metric SQL sums its floating-point terms exactly (fixed point in a decimal,
see docs/metrics.md) and the means over lists are taken in list order, so every value here
must be bit-identical:

- over twenty recomputes with DuckDB's thread count cycling through 1..8, for every registered
  per-list metric (each tie policy where it has a separate code path), its mean over lists and
  its slice means;
- between two runs of the same rows ingested in batches of different sizes (their list ids
  differ too, so their rows hash to other partitions);
- and `compare` of those two runs reports only ties.

The data is large enough (480,000 ranked rows over 2,500 lists, 200,000 matches over 200 pairs)
for DuckDB to split the work over threads: on the SQL before the fixed-point sums, every
recompute changed the bits of some values of `ap`, `ap_voc07`, `ap_coco`, `ap_voc10` and
`reprojection_error`, and the two copies differed.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from evalstore import Store
from evalstore.analysis.compare import UNTESTED, compare
from evalstore.analysis.evaluate import evaluate
from evalstore.ingest import sources
from evalstore.metrics.registry import METRICS, get

pytestmark = pytest.mark.slow  # about two minutes on 2 cores: twenty full recomputes

RECOMPUTES = 20
THREADS = [1 + i % 8 for i in range(RECOMPUTES)]  # 1, 2, ..., 8, 1, 2, ...
#: the two copies of every run are ingested in batches of these many rows
BATCHES = {"a": 4_096, "b": sources.BATCH_ROWS}
PER_LIST = sorted(name for name, m in METRICS.items() if m.kind == "per_list")
#: (ties, metrics): every metric under `grouped` ties (where `ap` has one SQL path for many
#: ties and one for few: the tied and the untied lists below take one each), and `ap` under a
#: per-rank policy, its third path (the other metrics read every policy alike)
TIE_PLANS = [("grouped", PER_LIST), ("optimistic", ["ap"])]
SLICES = ("split", "kind")
#: ranked lists with many ties; a quarter as many, twice as long, without (a single-label
#: classifier's probabilities); the latter's rows as one global list; and keypoint pairs: in all
#: 480,000 ranked rows and 200,000 matches
LISTS, ITEMS = 1_000, 120
PAIRS, MATCHES = 100, 1_000


def _ranked(seed: int, n_lists: int, n_items: int, decimals: int | None) -> dict[str, Any]:
    """Ranked lists: 10% positives, some ignored items and not-retrieved ones; scores rounded
    to `decimals` (many ties) or not."""
    rng = np.random.default_rng(seed)
    n = n_lists * n_items
    labels = rng.choice(np.array([1, -1, -1, -1, -1, -1, -1, -1, -1, 0]), size=n)
    scores = rng.standard_normal(n) + (labels == 1)
    if decimals is not None:
        scores = np.round(scores, decimals)
    scores[rng.random(n) < 0.02] = -np.inf
    group = np.repeat(np.arange(n_lists), n_items)
    return {"group_id": group, "item_id": np.arange(n), "score": scores, "label": labels}


def _single_label(seed: int, n_classes: int, n_samples: int) -> dict[str, Any]:
    """A single-label classifier's probabilities (a softmax over the classes, few ties): one
    list per class, every sample in each, +1 in its true class's list (the single-label
    metrics' layout, which the other ranking metrics read as any lists)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, n_classes, n_samples)
    logits = rng.standard_normal((n_samples, n_classes))
    logits[np.arange(n_samples), truth] += 2.0
    proba = np.exp(logits - logits.max(axis=1, keepdims=True))
    proba /= proba.sum(axis=1, keepdims=True)
    group = np.repeat(np.arange(n_classes), n_samples)
    item = np.tile(np.arange(n_samples), n_classes)
    labels = np.where(truth[item] == group, 1, -1)
    return {"group_id": group, "item_id": item, "score": proba.T.reshape(-1), "label": labels}


def _groups(n_lists: int) -> pl.DataFrame:
    return pl.DataFrame({"group_id": np.arange(n_lists), "split": np.arange(n_lists) % 7})


def _keypoints(seed: int, n_pairs: int, n_matches: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Matches near each pair's homography (some far off), so that RANSAC succeeds and every
    geometric metric has a value."""
    rng = np.random.default_rng(seed)
    pair = np.repeat(np.arange(n_pairs), n_matches)
    x0 = rng.uniform(0, 640, pair.size)
    y0 = rng.uniform(0, 480, pair.size)
    hs = np.tile(np.eye(3), (n_pairs, 1, 1))
    hs[:, 0, 2] = rng.uniform(-20, 20, n_pairs)
    hs[:, 1, 2] = rng.uniform(-20, 20, n_pairs)
    hs[:, 2, :2] = rng.normal(0, 1e-5, (n_pairs, 2))
    h = hs[pair]
    w = h[:, 2, 0] * x0 + h[:, 2, 1] * y0 + h[:, 2, 2]
    gx = (h[:, 0, 0] * x0 + h[:, 0, 1] * y0 + h[:, 0, 2]) / w
    gy = (h[:, 1, 0] * x0 + h[:, 1, 1] * y0 + h[:, 1, 2]) / w
    noise = rng.exponential(2.0, pair.size) * (1 + 20 * (rng.random(pair.size) < 0.1))
    angle = rng.uniform(0, 2 * np.pi, pair.size)
    matches = pl.DataFrame(
        {
            "pair_id": pair,
            "x0": x0,
            "y0": y0,
            "x1": gx + noise * np.cos(angle),
            "y1": gy + noise * np.sin(angle),
        }
    )
    pairs = pl.DataFrame(
        {
            "pair_id": np.arange(n_pairs),
            **{f"h{i + 1}{j + 1}": hs[:, i, j] for i in range(3) for j in range(3)},
            "width": np.full(n_pairs, 640),
            "height": np.full(n_pairs, 480),
            "kind": np.where(np.arange(n_pairs) % 3 == 0, "v", "i"),
        }
    )
    return matches, pairs


def _outcomes(seed: int, n_groups: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    return {
        "group_id": np.arange(n_groups),
        "tp": rng.integers(0, 1000, n_groups),
        "fp": rng.integers(0, 100, n_groups),
        "fn": rng.integers(0, 100, n_groups),
    }


def build(store: Store) -> None:
    """Two copies, a and b, of one run of every source, each ingested in its batch size."""
    tied = _ranked(1, LISTS, ITEMS, decimals=1)
    untied = _single_label(2, LISTS // 4, 2 * ITEMS)
    # the same rows as one list, each row an item
    one_list = {**{k: v for k, v in untied.items() if k != "group_id"},
                "item_id": np.arange(len(untied["score"]))}  # fmt: skip
    matches, pairs = _keypoints(3, PAIRS, MATCHES)
    outcomes = _outcomes(4, 20_000)
    for copy, batch in BATCHES.items():
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(sources, "BATCH_ROWS", batch)
            store.ingest(tied, task="retrieval", run=copy, groups=_groups(LISTS), git_commit=None)
            store.ingest(untied, task="classification", run=copy, append=True)
            store.ingest(one_list, task="verification", run=copy, append=True)
            store.ingest_keypoints(matches, run=copy, pairs=pairs, append=True)
            store.ingest_outcomes(outcomes, run=copy, append=True)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    with Store(Path(tmp_path_factory.mktemp("determinism")) / "d.duckdb") as s:
        build(s)
        yield s


def _bits(value: float | None) -> str | None:
    return None if value is None else struct.pack(">d", value).hex()


def _recompute(store: Store, threads: int) -> dict[tuple[Any, ...], str | None]:
    """Every per-list value, mean and slice mean of both runs, recomputed with `threads`
    DuckDB threads, as the bits of each double."""
    store.con.execute(f"set threads = {int(threads)}")  # test-only SQL: an int, not input
    try:
        for ties, names in TIE_PLANS:
            evaluate(store, ["a", "b"], metrics=names, ties=ties, by=SLICES, recompute=True)
    finally:
        store.con.execute("reset threads")
    rows = store.con.execute(  # test-only reads of the cache
        "select r.name, v.task, v.metric, v.params, 'list', v.group_id, v.value "
        "from list_values v join runs r using (run_id) union all "
        "select r.name, m.task, m.metric, m.params, 'mean', m.slice, m.value "
        "from metric_values m join runs r using (run_id)"
    ).fetchall()
    return {tuple(r[:6]): _bits(r[6]) for r in rows}


def _differences(
    first: dict[tuple[Any, ...], str | None], other: dict[tuple[Any, ...], str | None]
) -> dict[tuple[str, str, str], int]:
    """(run, "task metric", "params list|mean") -> how many of its values changed bits."""
    assert first.keys() == other.keys()
    changed: dict[tuple[str, str, str], int] = {}
    for key, bits in first.items():
        if other[key] != bits:
            what = (key[0], f"{key[1]} {key[2]}", f"{key[3]} {key[4]}")
            changed[what] = changed.get(what, 0) + 1
    return changed


def test_the_rows_fill_several_row_groups(store: Store) -> None:
    # DuckDB scans a table with a task per row group of 122,880 rows: several threads get work
    n = store.con.execute("select count(*) from score_items").fetchone()
    assert n is not None and n[0] > 3 * 122_880


def test_recomputes_are_bit_identical(store: Store) -> None:
    first = _recompute(store, THREADS[0])
    assert len(first) > 20_000
    changed: dict[tuple[str, str, str], int] = {}
    for threads in THREADS[1:]:
        for what, n in _differences(first, _recompute(store, threads)).items():
            changed[what] = changed.get(what, 0) + n
    assert changed == {}, "values that changed bits between recomputes: " + ", ".join(
        f"{run} {metric} {params}: {n}" for (run, metric, params), n in sorted(changed.items())
    )


def test_byte_identical_runs_have_bit_identical_values(store: Store) -> None:
    values = _recompute(store, 8)
    by_run: dict[str, dict[tuple[Any, ...], str | None]] = {"a": {}, "b": {}}
    for (run, *rest), bits in values.items():
        by_run[run][tuple(rest)] = bits
    assert by_run["a"].keys() == by_run["b"].keys()
    differ = sorted({k[1:3] for k, bits in by_run["a"].items() if by_run["b"][k] != bits})
    assert differ == []


def test_compare_of_byte_identical_runs_is_all_ties(store: Store) -> None:
    # each run computed alone, on its own number of threads, as runs scored on different days
    for run, threads in (("a", 1), ("b", 8)):
        store.con.execute(f"set threads = {threads}")  # test-only SQL
        try:
            evaluate(store, [run], metrics=PER_LIST, recompute=True)
        finally:
            store.con.execute("reset threads")
    frame = compare(store, ["a", "b"], metrics=PER_LIST)
    assert frame.height > len(PER_LIST)
    for row in frame.to_dicts():
        what = (row["task"], row["metric"], row["params"])
        # no test: TIDE's run values; no value (a NaN cf1): nothing to test
        if row["resampled"] in UNTESTED or row["value"] is None:
            assert (get(row["metric"]).overall == "run row") or row["n_lists"] < 10, what
            assert row["value"] == row["baseline_value"] and row["p_value"] is None, what
            assert row["diff"] == (None if row["value"] is None else 0.0), what
            continue
        assert (row["wins"], row["losses"]) == (0, 0), what
        # a run value's test, and a test over samples, count no list wins
        if get(row["metric"]).overall != "run row" and row["resampled"] != "samples":
            assert row["ties"] == row["n_lists"] > 0, what
        assert row["diff"] == 0.0 and row["ci_low"] == 0.0 and row["ci_high"] == 0.0, what
        assert row["p_value"] == 1.0, what
