"""The item bootstrap of AP by reweighting a fixed order (evalstore/analysis/reweighting.py).

Each replicate's AP equals the AP the sorting path computes (the resample expanded, item ``i``
repeated ``w_i`` times, and the metric's NumPy reference run on it) on the same
multiplicities, under every tie policy; the multiplicities are the stratified multinomial; and,
on simulated data with a known answer, the interval covers and the p-value's false alarms stay
at their level (docs/statistics.md).
"""

from __future__ import annotations

import dataclasses
from itertools import pairwise
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats as scipy_stats

from evalstore import Store, compare
from evalstore.analysis.multiplicities import (
    CDF,
    CELLS,
    TABLE,
    byte_cells,
    distinct,
    poisson,
    poisson_table,
    sparse_nonzero,
)
from evalstore.analysis.pairing import in_list_order
from evalstore.analysis.resampling import ItemLists, strata
from evalstore.analysis.reweighting import (
    FAST_METRICS,
    Layout,
    RunOrder,
    list_values,
    reweighted_replicates,
    stratified_weights,
)
from evalstore.analysis.statistics import inversion_p, percentile_interval
from evalstore.core.points import TIES, ranked_rows
from evalstore.metrics.registry import METRICS, Params, RankedLists

AP = METRICS["ap"]


def _lists(rng: np.random.Generator, n: int, n_lists: int, *, tied: bool, missed: int) -> ItemLists:
    """Two runs on ``n`` items of ``n_lists`` lists: labels +1/-1/0, some not retrieved
    (-inf), scores rounded to make ties when ``tied``, ``missed`` positives per list counted
    in ``n_positives`` but not among the items."""
    codes = np.sort(rng.integers(0, n_lists, n))
    labels = rng.choice(np.array([1, -1, 0]), size=n, p=[0.4, 0.5, 0.1])
    scores = [rng.normal(size=n) + labels, rng.normal(size=n) + 0.5 * labels]
    if tied:
        scores = [np.round(s, 1) for s in scores]
    scores[0][rng.random(n) < 0.05] = -np.inf
    counted = np.bincount(codes[labels == 1], minlength=n_lists)
    return ItemLists(
        codes=codes,
        labels=labels.astype(np.int64),
        order=rng.permutation(n),
        items=np.array([f"d{i}" for i in range(n)], dtype=object),
        scores=np.stack(scores),
        missed=np.full(n_lists, missed, dtype=np.int64),
        n_positives=counted + missed if missed else np.full(n_lists, -1, dtype=np.int64),
    )


def _sorted_path(
    items: ItemLists, w: np.ndarray, run: int, ties: str, metric: str = "ap"
) -> np.ndarray:
    """Each list's AP of the resample with multiplicities ``w``, as the sorting path computes
    it: the items repeated and the reference run on them."""
    index = np.repeat(np.arange(items.codes.size), w)
    over = np.flatnonzero(items.n_positives >= 0)
    assert items.items is not None
    lists = RankedLists(
        group=items.codes[index],
        scores=items.scores[run][index],
        labels=items.labels[index],
        order=items.order[index],
        items=items.items[index],
        lists=over if over.size else None,
        n_positives=items.n_positives[over] if over.size else None,
    )
    result = METRICS[metric].reference(lists, Params(ties=ties))
    values = np.full(items.n_lists, np.nan)
    values[np.asarray(result.group, dtype=np.int64)] = result.value
    return values


@pytest.mark.parametrize("metric", FAST_METRICS)
@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize(
    ("n_lists", "tied", "missed"), [(1, False, 0), (1, True, 1), (3, True, 2), (2, True, 0)]
)
def test_a_replicate_is_the_metric_of_the_expanded_resample(
    metric: str, ties: str, n_lists: int, tied: bool, missed: int
) -> None:
    rng = np.random.default_rng(31)
    items = _lists(rng, 400, n_lists, tied=tied, missed=missed)
    ranked = [RunOrder.ranked(items, items.scores[run], ties) for run in range(2)]
    layout = Layout.of(items, ranked[0].rows)
    counted = np.bincount(items.codes[items.labels == 1], minlength=n_lists)
    n_pos = np.where(items.n_positives >= 0, items.n_positives, counted).astype(float)
    n_neg = np.bincount(items.codes[items.labels == -1], minlength=n_lists).astype(float)
    kept = layout.slot >= 0
    # grouped AP's quotients and one list's sum are float32 (docs/statistics.md): 2e-6
    rtol = 2e-6 if (metric, ties) == ("ap", "grouped") else 0.0
    for run in range(2):
        order = RunOrder.of(items, ranked[run], ties, layout)
        block = np.empty((4, layout.size), dtype=np.uint8)  # four replicates read together
        layout.draw(rng, block)
        fast = list_values(metric, order, order.weights(block), n_pos, n_neg)
        for row, w in enumerate(block):
            by_item = np.zeros(items.codes.size, dtype=np.int64)
            by_item[kept] = w[layout.slot[kept]]
            slow = _sorted_path(items, by_item, run, ties, metric)
            np.testing.assert_allclose(fast[row], slow, rtol=rtol, atol=1e-12)
            [alone] = list_values(metric, order, order.weights(w), n_pos, n_neg)
            np.testing.assert_allclose(alone, slow, rtol=rtol, atol=1e-12)
            assert not np.isnan(alone).all()


def test_one_grouped_list_is_ranked_as_ranked_rows_ranks_it() -> None:
    """One list under grouped ties is ranked by an unstable sort: the same tie groups, in the
    same order, holding the same items as :func:`ranked_rows` (only the order within a group
    may differ); -inf and ignored items left out, -0.0 tied with 0.0."""
    rng = np.random.default_rng(39)
    items = _lists(rng, 3000, 1, tied=True, missed=0)
    scores = items.scores[0].copy()
    scores[:50] = 0.0
    scores[50:100] = -0.0
    fast = RunOrder.ranked(items, scores, "grouped")
    slow = ranked_rows(items.codes, scores, items.labels, ties="grouped", order=items.order)
    assert np.array_equal(fast.tie, slow.tie) and fast.tie[-1] > 20
    bounds = np.flatnonzero(np.diff(slow.tie)) + 1
    for a, b in zip(np.split(fast.rows, bounds), np.split(slow.rows, bounds), strict=True):
        assert np.array_equal(np.sort(a), np.sort(b))


def test_the_multiplicities_are_the_stratified_multinomial() -> None:
    """Each (list, label) stratum keeps its size in every resample; one item's count is
    Binomial(s, 1/s) (chi-square over 4,000 draws); positives in ``n_positives`` but not among
    the items take their share of the stratum's slots; ignored items weigh 0."""
    rng = np.random.default_rng(32)
    items = _lists(rng, 60, 2, tied=False, missed=3)
    draws = np.array([stratified_weights(items, rng) for _ in range(4000)])
    assert np.all(draws[:, items.labels == 0] == 0)
    for part, extra in strata(items):
        if items.labels[part[0]] == 0:
            continue
        totals = draws[:, part].sum(axis=1)
        s = part.size + extra
        if extra == 0:
            assert np.all(totals == s)
        else:  # the real items' share of s draws: Binomial(s, k / s)
            assert abs(totals.mean() - part.size) < 4 * np.sqrt(s * 0.25 / 4000) + 0.05
            assert np.all(totals <= s)
        count = draws[:, part[0]]
        top = 4
        seen = np.bincount(np.minimum(count, top), minlength=top + 1)
        p = scipy_stats.binom.pmf(np.arange(top), s, 1 / s)
        expected = 4000 * np.r_[p, 1 - p.sum()]
        assert scipy_stats.chisquare(seen, expected).pvalue > 0.001


def test_a_block_of_replicates_is_the_stratified_multinomial() -> None:
    """A block of replicates (a row each, its strata brought to size together): each row's
    strata keep their sizes, one item's count is Binomial(s, 1/s) over 4,000 rows, and the
    units removed from the rows whose Poisson total passed their size are distinct and
    uniform (:func:`distinct`)."""
    rng = np.random.default_rng(40)
    items = _lists(rng, 60, 2, tied=False, missed=3)
    layout = Layout.of(items, np.arange(items.codes.size))
    block = np.empty((4000, layout.size), dtype=np.uint8)
    layout.draw(rng, block)
    for offset, k, extra in layout.strata:
        s = k + extra
        totals = block[:, offset : offset + k].sum(axis=1)
        assert np.all(totals == s) if extra == 0 else np.all(totals <= s)
        seen = np.bincount(np.minimum(block[:, offset], 4), minlength=5)
        p = scipy_stats.binom.pmf(np.arange(4), s, 1 / s)
        assert scipy_stats.chisquare(seen, 4000 * np.r_[p, 1 - p.sum()]).pvalue > 0.001
    high = np.array([5, 40, 1000, 3])
    count = np.array([5, 7, 30, 0])
    row, value = distinct(rng, np.repeat(high, 2000), np.repeat(count, 2000))
    assert np.array_equal(np.bincount(row, minlength=8000), np.repeat(count, 2000))
    assert len(set(zip(row.tolist(), value.tolist(), strict=True))) == row.size  # distinct
    assert np.all(value < np.repeat(high, 2000)[row])
    in_40 = value[(row >= 2000) & (row < 4000)]  # 7 of 40, 2,000 times: each value 350 times
    assert scipy_stats.chisquare(np.bincount(in_40, minlength=40)).pvalue > 0.001


def test_poisson_counts_invert_the_cdf_from_bytes() -> None:
    """A random byte names an 8-bit cell of the uniform (a bijection of the 256 cells); the
    comparisons give each cell without a break of the CDF the count the inversion gives it;
    a 16-bit cell's count is the inversion's at every point of the cell; and the counts drawn
    follow Poisson(1) (chi-square over 2,000,000 draws), their totals by segment as the draw
    counts them."""
    cell, steps, first_break = byte_cells()
    assert sorted(cell.tolist()) == list(range(256))
    table = poisson_table(256)
    v = np.arange(256)
    by_steps = np.sum([v >= s for s in steps], axis=0)
    assert np.array_equal(by_steps[:first_break], table[cell[:first_break]])
    assert np.all(table[cell[first_break:]] == 255)  # the cells with a break come last
    for u in (0.0, 0.5, 1 - 2**-20):  # points inside each 16-bit cell
        whole = TABLE != 255
        at = np.searchsorted(CDF, (np.arange(CELLS) + u) / CELLS, side="right")
        assert np.array_equal(TABLE[whole], at[whole])
    out = np.empty(2_000_000, dtype=np.uint8)
    bounds = (0, 7, 1000, 1_500_000, out.size)
    totals = poisson(np.random.default_rng(38), out, np.empty(out.size, dtype=np.bool_), bounds)
    assert totals == [int(out[a:b].sum()) for a, b in pairwise(bounds)]
    top = 6
    seen = np.bincount(np.minimum(out, top), minlength=top + 1)
    p = scipy_stats.poisson.pmf(np.arange(top), 1)
    assert scipy_stats.chisquare(seen, out.size * np.r_[p, 1 - p.sum()]).pvalue > 0.001
    assert np.sum(out >= 5) > 0 and out.max() < 30


def test_replicates_are_paired_seeded_and_identical_runs_agree() -> None:
    rng = np.random.default_rng(33)
    items = _lists(rng, 300, 1, tied=False, missed=0)
    same = dataclasses.replace(items, scores=np.stack([items.scores[0]] * 2))
    reps = reweighted_replicates(AP, same, Params(), np.random.default_rng(1), 200)
    assert np.array_equal(reps[0], reps[1]) and reps[0].std() > 0
    again = reweighted_replicates(AP, items, Params(), np.random.default_rng(1), 50)
    assert np.array_equal(
        again, reweighted_replicates(AP, items, Params(), np.random.default_rng(1), 50)
    )


def test_compare_of_one_list_reweights_and_is_reproducible(db: Path) -> None:
    rng = np.random.default_rng(34)
    labels = rng.choice(np.array([1, -1]), size=3000)
    base = rng.normal(size=3000) + (labels == 1)
    with Store(db) as store:
        for name, noise in (("a", 0.0), ("b", 0.8)):
            store.ingest(
                {"item_id": np.arange(3000), "label": labels,
                 "score": base + noise * rng.normal(size=3000)},
                task="verification", run=f"pv/{name}",
            )  # fmt: skip
        first = compare(store, ["pv/a", "pv/b"], metrics=["ap"]).to_dicts()
        second = compare(store, ["pv/a", "pv/b"], metrics=["ap"]).to_dicts()
    [row] = first
    keys = ("diff", "ci_low", "ci_high", "p_value", "resampled")
    assert [row[k] for k in keys] == [second[0][k] for k in keys] and row["resampled"] == "items"
    assert row["ci_low"] < row["diff"] < row["ci_high"] < 0 and row["p_value"] < 0.01


def _one_list(labels: np.ndarray, scores: list[np.ndarray]) -> ItemLists:
    n = labels.size
    return ItemLists(
        codes=np.zeros(n, dtype=np.int64),
        labels=labels.astype(np.int64),
        order=np.arange(n),
        items=None,
        scores=np.stack(scores),
        missed=np.zeros(1, dtype=np.int64),
        n_positives=np.full(1, -1, dtype=np.int64),
    )


@pytest.mark.slow
def test_bootstrap_p_values_are_uniform_under_the_null() -> None:
    """Two runs whose scores are exchangeable item by item: the bootstrap's p-value of the
    reweighted replicates rejects at the nominal rate on one list of 400 pairs (300
    experiments)."""
    rng = np.random.default_rng(35)
    p = []
    for _ in range(300):
        labels = rng.choice(np.array([1, -1]), size=400)
        base = rng.normal(0, 1, 400) + (labels == 1)
        a = base + rng.normal(0, 1, 400)
        b = base + rng.normal(0, 1, 400)
        reps = reweighted_replicates(AP, _one_list(labels, [a, b]), Params(), rng, 199)
        p.append(inversion_p(reps[1] - reps[0]))
    p_arr = np.array(p)
    assert scipy_stats.kstest(p_arr, "uniform").pvalue > 0.001
    assert np.mean(p_arr < 0.05) <= 0.05 + 2.6 * np.sqrt(0.05 * 0.95 / 300)


@pytest.mark.slow
def test_reweighted_interval_covers_the_population_difference() -> None:
    """One list of 1,000 pairs from a population whose AP difference is known (400,000
    pairs): the reweighted bootstrap's 95% interval covers it 91-98% of 200 experiments."""
    rng = np.random.default_rng(36)

    def draw(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        labels = rng.choice(np.array([1, -1]), size=n)
        base = rng.normal(0, 1, n) + 1.2 * (labels == 1)
        return labels, base, base - 0.4 * (labels == 1) + rng.normal(0, 0.5, n)

    labels, a, b = draw(400_000)
    truth = -np.subtract(
        *[AP.reference(RankedLists(np.zeros(labels.size), s, labels), Params()).value[0]
          for s in (a, b)]
    )  # fmt: skip
    assert truth < -0.02
    hits = 0
    for _ in range(200):
        labels, a, b = draw(1000)
        reps = reweighted_replicates(AP, _one_list(labels, [a, b]), Params(), rng, 400)
        low, high = percentile_interval(reps[1] - reps[0])
        hits += low <= truth <= high
    assert 0.91 <= hits / 200 <= 0.98, hits / 200


def test_runs_given_in_another_order_are_aligned_by_item(db: Path) -> None:
    """Two runs of the same pairs, the second given in another order: aligned by item id
    (the sorted path), with the numbers of the same runs given in one order (the weights
    follow the first run's ranking, not the input order)."""
    rng = np.random.default_rng(37)
    n = 1500
    labels = rng.choice(np.array([1, -1]), size=n)
    a = rng.normal(size=n) + (labels == 1)
    b = a + rng.normal(size=n)
    shuffled = rng.permutation(n)
    rows = {"x": np.arange(n), "y": shuffled}
    with Store(db) as store:
        for tag, order in rows.items():
            store.ingest({"item_id": np.arange(n), "label": labels, "score": a},
                         task="verification", run=f"{tag}/a")  # fmt: skip
            store.ingest({"item_id": order, "label": labels[order], "score": b[order]},
                         task="verification", run=f"{tag}/b")  # fmt: skip
        [same] = compare(store, ["x/a", "x/b"], metrics=["ap"]).to_dicts()
        [other] = compare(store, ["y/a", "y/b"], metrics=["ap"]).to_dicts()
    keys = ("diff", "ci_low", "ci_high", "p_value", "resampled")
    assert [same[k] for k in keys] == [other[k] for k in keys]
    assert same["resampled"] == "items" and same["ci_low"] < same["diff"] < same["ci_high"]


def _unit_items(rng: np.random.Generator) -> pl.DataFrame:
    """Rows of the unit_items query's shape: 3 runs x 4 lists (one unnamed), ``seq`` in input
    order with gaps, ordered by (run_id, group_id NULL last, seq) as its ORDER BY was."""
    frames = []
    for run in (3, 7, 9):
        for group in ("a", "b", "é", None):
            n = int(rng.integers(1, 40))
            seq = np.cumsum(rng.integers(1, 3, n))
            frames.append(pl.DataFrame(
                {"run_id": run, "group_id": pl.Series([group] * n, dtype=pl.String),
                 "seq": seq, "score": rng.normal(size=n)}
            ))  # fmt: skip
    return pl.concat(frames)


def test_items_in_list_order_as_the_order_by_gave_them() -> None:
    """in_list_order: the rows in (run_id, group_id, seq) order, group NULL last, whatever
    order the stretches come in (the ORDER BY the query left out), and rows shuffled alike."""
    rng = np.random.default_rng(7)
    for _ in range(20):
        ordered = _unit_items(rng)
        cut = np.unique(np.r_[0, rng.integers(0, ordered.height, 6), ordered.height])
        stretches = [ordered[int(a) : int(b)] for a, b in pairwise(cut)]
        shuffled = pl.concat([stretches[i] for i in rng.permutation(len(stretches))])
        assert in_list_order(shuffled).equals(ordered)
        assert in_list_order(ordered).equals(ordered)
        rows = ordered[rng.permutation(ordered.height)]
        assert in_list_order(rows).equals(ordered)


def test_sparse_nonzero_is_flatnonzero() -> None:
    rng = np.random.default_rng(3)
    for n in (0, 1, 7, 8, 9, 64, 1001, 100_003):
        for p in (0.0, 0.02, 0.5, 1.0):
            mask = rng.random(n) < p
            assert np.array_equal(sparse_nonzero(mask), np.flatnonzero(mask))


@pytest.mark.parametrize("n", [2_000, 30_001])
def test_the_draws_cumulative_sums_serve_the_first_runs_pass(n: int) -> None:
    """One replicate at a time, ``to_size`` hands the cumulative sums it makes when it removes
    units (those of the final counts) to the pass of the run whose order the layout follows:
    they equal NumPy's cumulative sum of the drawn counts, and every run's AP (and fpr95, which
    sums for itself) is bit for bit the one computed without them, on the same weights."""
    rng = np.random.default_rng(41)
    labels = np.where(rng.random(n) < 0.5, 1, -1)
    base = rng.normal(size=n) + labels
    items = ItemLists(
        codes=np.zeros(n, dtype=np.int64),
        labels=labels.astype(np.int64),
        order=np.arange(n),
        items=None,
        scores=np.stack([base, base + 0.3 * rng.normal(size=n)]),
        missed=np.zeros(1, dtype=np.int64),
        n_positives=np.full(1, -1, dtype=np.int64),
    )
    ranked = [RunOrder.ranked(items, items.scores[run], "grouped") for run in range(2)]
    layout = Layout.of(items, ranked[0].rows)
    orders = [RunOrder.of(items, r, "grouped", layout) for r in ranked]
    assert (orders[0].pos_stratum, orders[0].neg_stratum) != (-1, -1)
    assert (orders[1].pos_stratum, orders[1].neg_stratum) == (-1, -1)  # gathered weights
    n_pos, n_neg = np.array([float(np.sum(labels == 1))]), np.array([float(np.sum(labels == -1))])
    cums = np.zeros((2, layout.size + len(layout.strata)), dtype=np.int32)  # row 1 the sums
    w = np.empty(layout.size, dtype=np.uint8)
    served = 0
    for _ in range(40):
        filled = layout.draw(rng, w, cums=cums)
        for s, (offset, k, _) in enumerate(layout.strata):
            if filled[s]:
                served += 1
                expected = np.r_[0, np.cumsum(w[offset : offset + k])]
                assert np.array_equal(cums[1, offset + s : offset + s + k + 1], expected)
        for metric in ("ap", "fpr95"):
            for order in orders:
                drawn = (cums.copy(), filled)  # the pass may write over the sums it reads
                with_sums = list_values(metric, order, order.weights(w), n_pos, n_neg, drawn)
                alone = list_values(metric, order, order.weights(w), n_pos, n_neg)
                assert np.array_equal(with_sums, alone)
    assert 10 < served < 70  # about one stratum of two in each of the 40 draws
