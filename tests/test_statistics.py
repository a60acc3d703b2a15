"""The statistics of comparisons checked on simulated data with known answers: Holm's
adjustment, the t factor, coverage of the intervals, p-values uniform under the null (false
alarms at the nominal rate), and power where there is a real difference."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from evalstore.analysis.resampling import ItemLists, item_replicates, rank_swap_p
from evalstore.analysis.statistics import (
    effect_size,
    holm,
    inversion_p,
    list_replicates,
    percentile_interval,
    seed_factor,
    sign_flip_p,
)
from evalstore.metrics.registry import METRICS, Params, RankedLists

AP = METRICS["ap"]


# ----------------------------------------------------------------------------- Holm


def _holm_by_definition(p: list[float]) -> list[float]:
    """Holm (1979): reject H_(i) while p_(j) <= alpha / (m - j + 1) for all j <= i; the
    adjusted p-value is the smallest alpha at which H_(i) is rejected."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def test_holm_on_a_hand_worked_case() -> None:
    # m = 4: 0.01*4 = 0.04, 0.02*3 = 0.06, 0.03*2 = 0.06, 0.5*1 = 0.5
    assert holm([0.03, 0.01, 0.5, 0.02]).tolist() == pytest.approx([0.06, 0.04, 0.5, 0.06])


@pytest.mark.parametrize("seed", range(20))
def test_holm_matches_its_definition_and_leaves_nan_out(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = rng.random(rng.integers(1, 30)) ** 3
    assert holm(p).tolist() == pytest.approx(_holm_by_definition(p.tolist()))
    with_nan = np.append(p, np.nan)
    adjusted = holm(with_nan)
    assert np.isnan(adjusted[-1]) and adjusted[:-1].tolist() == pytest.approx(holm(p).tolist())
    assert np.all(holm(p) >= p)


def test_seed_factor_is_t_over_z_with_pooled_degrees_of_freedom() -> None:
    z = scipy_stats.norm.ppf(0.975)
    assert seed_factor(1, 1) == 1.0
    assert seed_factor(3, 3) == pytest.approx(scipy_stats.t.ppf(0.975, 4) / z)
    assert seed_factor(1, 5) == pytest.approx(scipy_stats.t.ppf(0.975, 4) / z)


def test_effect_size_is_cohens_dz() -> None:
    d = np.array([0.1, 0.3, 0.2, 0.4])
    assert effect_size(d) == pytest.approx(d.mean() / d.std(ddof=1))
    assert np.isnan(effect_size(np.array([0.2])))


def test_inversion_p_is_two_sided_and_one_for_all_zero() -> None:
    assert inversion_p(np.zeros(999)) == 1.0
    reps = np.concatenate([np.full(990, 0.1), np.full(9, -0.1)])
    assert inversion_p(reps) == pytest.approx(2 * 10 / 1000)


def _exact_sign_flip_p(d: np.ndarray) -> float:
    """The sign-flip p-value by definition: all 2^n sign vectors, one at a time in blocks."""
    n = d.size
    observed = abs(d.sum())
    hits = 0
    for start in range(0, 2**n, 2**16):
        codes = np.arange(start, min(2**n, start + 2**16))[:, None]
        signs = 1.0 - 2.0 * ((codes >> np.arange(n)) & 1)
        hits += int(np.sum(np.abs(signs @ d) >= observed - 1e-9))
    return hits / 2**n


@pytest.mark.slow  # a simulation: random sign flips against the exact p-value
@pytest.mark.parametrize("n", [17, 19, 20])
def test_random_sign_flip_p_estimates_the_exact_p_value(n: int) -> None:
    """Above EXACT_UP_TO lists the p-value is estimated from random sign vectors (random
    bytes looked up in tables of partial sums): it estimates the exact permutation p-value,
    within the binomial error of its draws, list counts not a multiple of 8 and tied
    magnitudes included."""
    rng = np.random.default_rng(n)
    cases = [rng.normal(0.3, 1, n), np.round(rng.normal(0.4, 1, n), 1), np.ones(n)]
    for d in cases:
        exact = _exact_sign_flip_p(d)
        n_perm = 40_000
        got = sign_flip_p(d, rng, n_perm)
        sd = np.sqrt(max(exact, 1 / n_perm) * (1 - exact) / n_perm)
        assert abs(got - (exact * n_perm + 1) / (n_perm + 1)) <= 4 * sd + 1e-12, (got, exact)
    assert sign_flip_p(np.zeros(n), rng, 500) == 1.0


# ----------------------------------------------------------------------------- simulations


def _configs(
    rng: np.random.Generator, seeds: int, sd_seed: float, sd_inter: float, true_diff: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per-list values (seeds x 50 lists) of two configurations: a list difficulty shared by
    both, a configuration x list interaction, a seed effect and cell noise; lists and seeds
    drawn afresh, so the estimand is ``true_diff``."""
    lists = 50
    shared = rng.normal(0, 0.1, lists)
    a = 0.5 + shared + rng.normal(0, sd_inter, lists)
    b = 0.5 + true_diff + shared + rng.normal(0, sd_inter, lists)
    a = a + rng.normal(0, sd_seed, (seeds, 1)) + rng.normal(0, 0.01, (seeds, lists))
    b = b + rng.normal(0, sd_seed, (seeds, 1)) + rng.normal(0, 0.01, (seeds, lists))
    return a, b


@pytest.mark.slow
@pytest.mark.parametrize(
    ("seeds", "sd_seed", "sd_inter"),
    [(3, 0.02, 0.05), (3, 0.005, 0.05), (3, 0.02, 0.005), (5, 0.02, 0.02), (1, 0.0, 0.05)],
)
def test_hierarchical_interval_covers_95_percent(
    seeds: int, sd_seed: float, sd_inter: float
) -> None:
    """Over 600 simulated experiments, the 95% interval holds the true difference 92-98% of
    the time, whether seeds or lists dominate the variance (the t factor at work with three
    seeds; one seed each is the plain paired bootstrap over lists)."""
    rng = np.random.default_rng(seeds * 1000 + int(sd_seed * 1e4))
    hits = 0
    n = 600
    for _ in range(n):
        a, b = _configs(rng, seeds, sd_seed, sd_inter, 0.02)
        low, high = percentile_interval(list_replicates(a, b, rng, 500))
        hits += low <= 0.02 <= high
    assert 0.92 <= hits / n <= 0.98, hits / n


@pytest.mark.slow
@pytest.mark.parametrize(("seeds", "sd_seed"), [(3, 0.02), (3, 0.0), (5, 0.01)])
def test_configuration_p_values_are_uniform_under_the_null(seeds: int, sd_seed: float) -> None:
    """Equal configurations: the p-value compare reports (the larger of the pooled sign-flip
    test and the bootstrap's) rejects at most at the nominal rate, and the pooled sign-flip
    test alone would not (it cannot see seed variance)."""
    rng = np.random.default_rng(seeds + int(sd_seed * 1e3))
    n = 400
    reported, pooled = [], []
    for _ in range(n):
        a, b = _configs(rng, seeds, sd_seed, 0.05, 0.0)
        d = b.mean(axis=0) - a.mean(axis=0)
        p_flip = sign_flip_p(d, rng, 2000)
        pooled.append(p_flip)
        reported.append(max(p_flip, inversion_p(list_replicates(a, b, rng, 1000))))
    rate = np.mean(np.array(reported) < 0.05)
    assert rate <= 0.05 + 2.6 * np.sqrt(0.05 * 0.95 / n), rate  # one-sided 99.5% bound
    if sd_seed > 0.01:
        assert np.mean(np.array(pooled) < 0.05) > 0.15  # why the pooled test is not enough
    assert rate > 0.005  # not a test that never rejects either


@pytest.mark.slow
def test_sign_flip_p_values_of_two_runs_are_uniform_under_the_null() -> None:
    rng = np.random.default_rng(11)
    p = np.array([sign_flip_p(rng.normal(0, 1, 30), rng, 2000) for _ in range(500)])
    assert scipy_stats.kstest(p, "uniform").pvalue > 0.001
    assert abs(np.mean(p < 0.05) - 0.05) < 0.03


def _one_list(rng: np.random.Generator, n: int, signal: float) -> tuple[np.ndarray, np.ndarray]:
    labels = rng.choice(np.array([1, -1]), size=n)
    base = rng.normal(0, 1, n) + signal * (labels == 1)
    return labels, base


def _items(labels: np.ndarray, scores: list[np.ndarray]) -> ItemLists:
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
def test_rank_swap_p_values_are_uniform_under_the_null() -> None:
    """Two runs whose scores are exchangeable item by item (the same signal, independent
    noise): the item-level randomisation test rejects at the nominal rate on one list."""
    rng = np.random.default_rng(12)
    p = []
    for _ in range(300):
        labels, base = _one_list(rng, 400, 1.0)
        a = base + rng.normal(0, 1, base.size)
        b = base + rng.normal(0, 1, base.size)
        p.append(rank_swap_p(AP, _items(labels, [a, b]), Params(), rng, 199))
    p_arr = np.array(p)
    assert scipy_stats.kstest(p_arr, "uniform").pvalue > 0.001
    assert np.mean(p_arr < 0.05) <= 0.05 + 2.6 * np.sqrt(0.05 * 0.95 / 300)


@pytest.mark.slow
def test_item_bootstrap_interval_covers_the_population_difference() -> None:
    """One list of 1,000 pairs drawn from a population whose AP difference is known (computed
    on 400,000 pairs): the stratified item bootstrap's 95% interval covers it 91-98% of the
    time over 200 experiments."""
    rng = np.random.default_rng(13)

    def draw(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        labels, base = _one_list(rng, n, 1.2)
        return labels, base, base - 0.4 * (labels == 1) + rng.normal(0, 0.5, n)

    labels, a, b = draw(400_000)
    big = _items(labels, [a, b])
    values = [AP.reference(_ranked(big, r), Params()).value[0] for r in range(2)]
    truth = values[1] - values[0]
    assert truth < -0.02  # a real drop
    hits = 0
    for _ in range(200):
        labels, a, b = draw(1000)
        reps = item_replicates(AP, _items(labels, [a, b]), Params(), rng, 400)
        low, high = percentile_interval(reps[1] - reps[0])
        hits += low <= truth <= high
    assert 0.91 <= hits / 200 <= 0.98, hits / 200


def _ranked(items: ItemLists, run: int) -> RankedLists:
    return RankedLists(group=items.codes, scores=items.scores[run], labels=items.labels)


def test_item_bootstrap_keeps_each_lists_positives_and_is_paired() -> None:
    """Every resample keeps each list's numbers of positives and negatives (stratified), and
    two identical runs get identical replicates (the resample is shared)."""
    rng = np.random.default_rng(14)
    labels, base = _one_list(rng, 300, 1.0)
    same = _items(labels, [base, base.copy()])
    reps = item_replicates(AP, same, Params(), rng, 200)
    assert np.array_equal(reps[0], reps[1]) and reps[0].std() > 0
    assert rank_swap_p(AP, same, Params(), rng, 99) == 1.0


def test_missed_positives_are_resampled_with_the_retrieved_ones() -> None:
    """A list whose n_positives counts positives that were never retrieved: the resamples'
    AP stays below the AP of the retrieved items alone, as the stored value does."""
    rng = np.random.default_rng(15)
    labels, base = _one_list(rng, 200, 2.0)
    n_pos = int((labels == 1).sum())
    items = ItemLists(
        codes=np.zeros(200, dtype=np.int64),
        labels=labels.astype(np.int64),
        order=np.arange(200),
        items=None,
        scores=np.stack([base]),
        missed=np.array([n_pos]),
        n_positives=np.array([2 * n_pos]),
    )
    reps = item_replicates(AP, items, Params(), rng, 200)[0]
    full = _items(labels, [base])
    alone = AP.reference(_ranked(full, 0), Params()).value[0]
    assert np.all(reps < alone) and abs(reps.mean() - alone / 2) < 0.05
