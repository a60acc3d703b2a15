"""The statistics of comparisons: intervals and p-values of differences between runs or
configurations (sets of runs that differ only in their seed), and Holm's correction.

Everything here is NumPy on values already computed; :mod:`evalstore.analysis.compare` reads
them from the store. docs/statistics.md gives the formulas and the simulations that check them:

- **lists** (the default): per-list values, paired by list. A run against a run: the
  percentile bootstrap of the mean paired difference and a sign-flip randomisation test
  (:func:`paired_stats`). Configurations: a hierarchical bootstrap, seeds resampled within
  each configuration and then lists (one draw shared by every run, so the pairing by list is
  kept), with the seeds' deviations widened by a small-sample factor (:func:`seed_factor`);
  the p-value is the larger of the sign-flip test of the per-list differences of the seed
  means and the bootstrap's own p-value (:func:`inversion_p`).
- **items** (fewer than :data:`MIN_LISTS` lists, ranking metrics): the items of each list are
  resampled within their label and the metric recomputed on every resample: AP and fpr95 by
  reweighting each run's fixed order (:mod:`evalstore.analysis.reweighting`), the others by
  their NumPy reference (:mod:`evalstore.analysis.resampling`); configurations, and two runs
  under the reweighting, then get the p-value of the bootstrap distribution
  (:func:`inversion_p`).

>>> holm([0.01, 0.04, 0.03]).tolist()
[0.03, 0.06, 0.06]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "CHUNK",
    "EXACT_UP_TO",
    "MIN_LISTS",
    "TIE_TOLERANCE",
    "Stats",
    "effect_size",
    "holm",
    "inversion_p",
    "list_replicates",
    "paired_stats",
    "percentile_interval",
    "seed_factor",
    "seed_replicates",
    "sign_flip_p",
    "t_quantile",
]

#: With fewer lists than this, ranking metrics resample items within lists, not lists.
MIN_LISTS = 10
#: The sign-flip test enumerates all 2^n sign assignments up to this many lists.
EXACT_UP_TO = 16
#: A per-list difference ``|b - a| <= 1e-12`` is a tie, neither a win nor a loss: metric values
#: are bit-identical for identical rows (docs/metrics.md, "Determinism"), but values that agree
#: only to rounding (one run computed on Spark, the other on DuckDB) are no win either.
TIE_TOLERANCE = 1e-12
#: Values per resampling block: memory stays bounded whatever the number of lists.
CHUNK = 2_000_000


@dataclass(frozen=True)
class Stats:
    """Paired statistics of per-list differences ``b - a``: ``positive``, ``zero`` and
    ``negative`` count the differences above :data:`TIE_TOLERANCE`, within it of 0 (ties) and
    below ``-TIE_TOLERANCE``."""

    n: int
    mean: float
    ci_low: float
    ci_high: float
    p_value: float
    positive: int
    zero: int
    negative: int


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (SciPy's)."""
    from scipy.stats import t

    return float(t.ppf(p, df))


def holm(p_values: np.ndarray | list[float]) -> np.ndarray:
    """Holm's step-down adjustment of ``m`` p-values (family-wise error rate): the ``i``-th
    smallest becomes ``max_{j <= i} min(1, (m - j + 1) p_(j))``. NaN p-values are left out of
    ``m`` and stay NaN."""
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = ok.size
    if m == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    scaled = (m - np.arange(m)) * p[order]
    out[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return out


def effect_size(diffs: np.ndarray) -> float:
    """Cohen's d_z of paired per-list differences: their mean over their standard deviation
    (NaN with fewer than two lists or no spread)."""
    d = np.asarray(diffs, dtype=np.float64)
    d = d[~np.isnan(d)]
    if d.size < 2:
        return float("nan")
    sd = float(d.std(ddof=1))
    return float(d.mean() / sd) if sd > 0 else float("nan")


def percentile_interval(replicates: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The percentile interval of bootstrap replicates. Replicates that hold an infinity (a
    difference of median pose errors, where a run's median is +inf) take the order
    statistics themselves (``inverted_cdf``), not a line between two of them, whose
    ``inf - inf`` would be NaN; finite replicates are interpolated as always."""
    alpha = (1 - level) / 2
    values = np.asarray(replicates, dtype=np.float64)
    if np.isfinite(values).all():
        low, high = np.quantile(values, [alpha, 1 - alpha])
    else:
        low, high = np.quantile(values, [alpha, 1 - alpha], method="inverted_cdf")
    return float(low), float(high)


def inversion_p(replicates: np.ndarray) -> float:
    """The two-sided p-value of 0 under a bootstrap distribution (the smallest level at which
    the percentile interval excludes 0): ``min(1, 2 (1 + #{r* on the far side of 0}) /
    (B + 1))``. A distribution that is all 0 gives 1."""
    r = np.asarray(replicates, dtype=np.float64)
    below = int(np.sum(r <= TIE_TOLERANCE))
    above = int(np.sum(r >= -TIE_TOLERANCE))
    return min(1.0, 2 * (1 + min(below, above)) / (r.size + 1))


#: Byte -> the signs it stands for: bit ``j`` of byte ``b`` set flips list ``j`` of its group.
_BYTE_SIGNS = 1.0 - 2.0 * ((np.arange(256)[:, None] >> np.arange(8)) & 1)


def sign_flip_p(diffs: np.ndarray, rng: np.random.Generator, n_perm: int = 10_000) -> float:
    """Paired sign-flip randomisation test of ``mean(diffs) = 0``: exact (all 2^n sign
    assignments) for up to :data:`EXACT_UP_TO` values, else ``n_perm`` random ones with
    ``p = (hits + 1) / (n_perm + 1)``. Counts assignments whose mean is at least as far from 0
    as the observed one, the observed included: all-zero differences give 1.

    The random sign vectors are random bytes, one bit per list, and their sums are looked up
    rather than multiplied out: the lists are cut into groups of 8, each group gets a table of
    its 256 signed partial sums, and a sign vector's sum is the sum of one table entry per
    group (``n / 8`` additions instead of ``n`` random draws and products; each sign is still
    +1 or -1 with probability 1/2, independently, so the test is the same).
    """
    d = np.asarray(diffs, dtype=np.float64)
    n = d.size
    observed = abs(float(d.mean()))
    tol = 1e-12 * max(1.0, float(np.abs(d).max()))
    if n <= EXACT_UP_TO:
        signs = 1 - 2 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1)
        flipped = np.abs((signs * d).mean(axis=1))
        return float(np.mean(flipped >= observed - tol))
    groups = -(-n // 8)
    padded = np.zeros(groups * 8)
    padded[:n] = d  # a padded 0 adds 0 whatever its sign
    table = (padded.reshape(groups, 8) @ _BYTE_SIGNS.T).ravel()  # (group, byte) -> sum
    offsets = np.arange(groups, dtype=np.intp) * 256
    bar = n * (observed - tol)  # on the scale of sums
    step = max(1, CHUNK // groups)
    hits = done = 0
    while done < n_perm:
        m = min(n_perm - done, step)
        drawn = rng.integers(0, 256, size=(m, groups), dtype=np.uint8)
        sums = np.take(table, drawn.astype(np.intp) + offsets, mode="clip").sum(axis=1)
        hits += int(np.sum(np.abs(sums) >= bar))
        done += m
    return (hits + 1) / (n_perm + 1)


def paired_stats(
    diffs: np.ndarray,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    n_perm: int = 10_000,
    level: float = 0.95,
) -> Stats:
    """Bootstrap interval and sign-flip p-value of the mean of paired differences.

    Args:
        diffs: per-list differences (NaN = a list without a value in one run: left out).
        n_boot: bootstrap resamples of the lists (percentile interval).
        seed: seed of the generator (results are reproducible).
        n_perm: random sign flips when there are more than 16 lists (else all 2^n).
        level: the interval's coverage.

    Returns:
        A :class:`Stats`; with no list every field is NaN/0. The p-value counts sign
        assignments whose mean is at least as far from 0 as the observed one, the observed
        included: identical runs give p = 1.
    """
    d = np.asarray(diffs, dtype=np.float64)
    d = d[~np.isnan(d)]
    n = d.size
    if n == 0:
        nan = float("nan")
        return Stats(0, nan, nan, nan, nan, 0, 0, 0)
    rng = np.random.default_rng(seed)
    means = np.empty(n_boot)
    step = max(1, CHUNK // n)
    for start in range(0, n_boot, step):
        stop = min(n_boot, start + step)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = d[idx].mean(axis=1)
    low, high = percentile_interval(means, level)
    p = sign_flip_p(d, rng, n_perm)
    return Stats(
        n,
        float(d.mean()),
        low,
        high,
        p,
        int((d > TIE_TOLERANCE).sum()),
        int((np.abs(d) <= TIE_TOLERANCE).sum()),
        int((d < -TIE_TOLERANCE).sum()),
    )


# ----------------------------------------------------------------------------- seeds


def seed_factor(n_a: int, n_b: int, level: float = 0.95) -> float:
    """The factor that widens the seeds' deviations from their configuration's mean before
    they are resampled: ``sqrt(S / (S - 1)) * t_{(1+level)/2, df} / z_{(1+level)/2}`` with
    ``df = (n_a - 1) + (n_b - 1)`` (the first term undoes the bootstrap's ``(S-1)/S`` variance,
    the second its normal tails with few seeds). Returns the t/z part; 1 when ``df = 0``."""
    df = (n_a - 1) + (n_b - 1)
    if df <= 0:
        return 1.0
    q = (1 + level) / 2
    from statistics import NormalDist

    return t_quantile(q, df) / NormalDist().inv_cdf(q)


def _widened(values: np.ndarray, factor: float) -> np.ndarray:
    """Rows (seeds) moved away from their mean by ``sqrt(S/(S-1)) * factor``."""
    s = values.shape[0]
    if s < 2:
        return values
    mean = values.mean(axis=0, keepdims=True)
    return mean + (values - mean) * (np.sqrt(s / (s - 1)) * factor)


def _seed_weights(rng: np.random.Generator, s: int, size: int) -> np.ndarray:
    """(size, s) bootstrap weights of ``s`` seeds, each row summing to 1."""
    if s == 1:
        return np.ones((size, 1))
    return rng.multinomial(s, np.full(s, 1.0 / s), size=size) / s


def list_replicates(
    values_a: np.ndarray,
    values_b: np.ndarray,
    rng: np.random.Generator,
    n_boot: int = 1000,
    level: float = 0.95,
) -> np.ndarray:
    """Hierarchical bootstrap replicates of ``mean(values_b) - mean(values_a)``.

    Args:
        values_a: (S_a, L) per-list values of the baseline's seeds (one row per run).
        values_b: (S_b, L) those of the other configuration, on the same lists.

    Each replicate draws S_a and S_b seeds with replacement (deviations widened by
    :func:`seed_factor`), then L lists with replacement, one draw for both (lists are paired):
    ``sum_l w_l (mean_{s*} b[s, l] - mean_{s*} a[s, l])``. For two single runs this is the
    paired bootstrap over lists.
    """
    factor = seed_factor(values_a.shape[0], values_b.shape[0], level)
    a = _widened(np.asarray(values_a, dtype=np.float64), factor)
    b = _widened(np.asarray(values_b, dtype=np.float64), factor)
    n_lists = a.shape[1]
    out = np.empty(n_boot)
    step = max(1, CHUNK // max(n_lists, a.shape[0], b.shape[0]))
    for start in range(0, n_boot, step):
        m = min(n_boot, start + step) - start
        lists = rng.multinomial(n_lists, np.full(n_lists, 1.0 / n_lists), size=m) / n_lists
        per_list = _seed_weights(rng, b.shape[0], m) @ b - _seed_weights(rng, a.shape[0], m) @ a
        out[start : start + m] = (per_list * lists).sum(axis=1)
    return out


def seed_replicates(
    reps_a: np.ndarray,
    reps_b: np.ndarray,
    rng: np.random.Generator,
    level: float = 0.95,
) -> np.ndarray:
    """Replicates of the difference of configuration means from per-run replicates (runs x B,
    one column per item resample shared by all runs): seeds drawn with replacement in each
    column, deviations widened as in :func:`list_replicates`."""
    factor = seed_factor(reps_a.shape[0], reps_b.shape[0], level)
    a = _widened(reps_a, factor)
    b = _widened(reps_b, factor)
    n = a.shape[1]
    wa = _seed_weights(rng, a.shape[0], n)
    wb = _seed_weights(rng, b.shape[0], n)
    return np.einsum("bs,sb->b", wb, b) - np.einsum("bs,sb->b", wa, a)
