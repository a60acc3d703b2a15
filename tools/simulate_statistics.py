"""Prints the simulation tables of docs/statistics.md: coverage of the 95% intervals and false
alarms of the p-values at 5%, on simulated data whose answer is known.

    python tools/simulate_statistics.py          # about 9 minutes on 2 shared cores

tests/test_statistics.py asserts the same properties (fewer experiments, `slow` marker).
"""

from __future__ import annotations

import numpy as np

from evalstore.analysis.resampling import ItemLists, item_replicates, rank_swap_p
from evalstore.analysis.statistics import (
    inversion_p,
    list_replicates,
    percentile_interval,
    sign_flip_p,
)
from evalstore.metrics.registry import METRICS, Params, RankedLists

AP = METRICS["ap"]


def configs(
    rng: np.random.Generator, seeds: int, sd_seed: float, sd_inter: float, diff: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per-list values (seeds x 50 lists): list difficulty (sd 0.1, shared), configuration x
    list interaction (sd_inter), seed effect (sd_seed), cell noise (sd 0.01)."""
    lists = 50
    shared = rng.normal(0, 0.1, lists)
    a = 0.5 + shared + rng.normal(0, sd_inter, lists)
    b = 0.5 + diff + shared + rng.normal(0, sd_inter, lists)
    a = a + rng.normal(0, sd_seed, (seeds, 1)) + rng.normal(0, 0.01, (seeds, lists))
    b = b + rng.normal(0, sd_seed, (seeds, 1)) + rng.normal(0, 0.01, (seeds, lists))
    return a, b


def lists_table(n: int = 1000) -> None:
    print(
        "| seeds | sd seed | sd list x config | coverage | false alarms: reported p | "
        "pooled sign-flip alone |"
    )
    print("|---|---|---|---|---|---|")
    rng = np.random.default_rng(2026)
    for seeds, sd_seed, sd_inter in [
        (1, 0.0, 0.05),
        (3, 0.0, 0.05),
        (3, 0.005, 0.05),
        (3, 0.02, 0.05),
        (3, 0.02, 0.005),
        (5, 0.02, 0.02),
        (10, 0.02, 0.05),
    ]:
        hits = alarms = pooled = 0
        for _ in range(n):
            a, b = configs(rng, seeds, sd_seed, sd_inter, 0.02)
            low, high = percentile_interval(list_replicates(a, b, rng, 1000))
            hits += low <= 0.02 <= high
            a, b = configs(rng, seeds, sd_seed, sd_inter, 0.0)
            d = b.mean(axis=0) - a.mean(axis=0)
            p_flip = sign_flip_p(d, rng, 2000)
            p = p_flip if seeds == 1 else max(p_flip, inversion_p(list_replicates(a, b, rng)))
            alarms += p < 0.05
            pooled += p_flip < 0.05
        print(
            f"| {seeds} | {sd_seed} | {sd_inter} | {hits / n:.1%} | {alarms / n:.1%} | "
            f"{pooled / n:.1%} |"
        )


def one_list(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    labels = rng.choice(np.array([1, -1]), size=n)
    return labels, rng.normal(0, 1, n) + 1.2 * (labels == 1)


def items(labels: np.ndarray, scores: list[np.ndarray]) -> ItemLists:
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


def items_table(n: int = 300) -> None:
    rng = np.random.default_rng(7)
    labels, base = one_list(rng, 400_000)
    worse = base - 0.4 * (labels == 1) + rng.normal(0, 0.5, base.size)
    truth = [
        AP.reference(RankedLists(np.zeros(base.size), s, labels), Params()).value[0]
        for s in (base, worse)
    ]
    diff = truth[1] - truth[0]
    hits = alarms = 0
    for _ in range(n):
        labels, base = one_list(rng, 1000)
        worse = base - 0.4 * (labels == 1) + rng.normal(0, 0.5, base.size)
        reps = item_replicates(AP, items(labels, [base, worse]), Params(), rng, 1000)
        low, high = percentile_interval(reps[1] - reps[0])
        hits += low <= diff <= high
        a = base + rng.normal(0, 1, base.size)
        b = base + rng.normal(0, 1, base.size)
        alarms += rank_swap_p(AP, items(labels, [a, b]), Params(), rng, 999) < 0.05
    print(
        "| one list of 1,000 pairs | coverage of the AP difference "
        f"({diff:+.4f}) | false alarms of the rank-swap test |"
    )
    print("|---|---|---|")
    print(f"| {n} experiments | {hits / n:.1%} | {alarms / n:.1%} |")


if __name__ == "__main__":
    lists_table()
    print()
    items_table()
