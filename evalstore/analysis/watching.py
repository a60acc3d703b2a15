"""Watching a comparison while it resamples items: how many replicates each metric has done,
and the running estimate (interval, p-value) of those done so far.

The item resampling of few lists (:mod:`~evalstore.analysis.reweighting`,
:mod:`~evalstore.analysis.resampling`) takes seconds on lists of a million pairs: the UI's
Compare page shows its progress meanwhile. :mod:`~evalstore.analysis.pairing` says which
metric is resampled (:func:`begin`), the resampling loops report each block of replicates
(:func:`replicates`) and of the rank-swap test's permutations (:func:`swapped`). Nothing is
kept unless the calling thread watches (:func:`watching`); a report copies the replicates done
and draws nothing from the random stream, so the results are the same, watched or not.

A running estimate is the final computation stopped early: the percentile interval and the
bootstrap's p-value of the differences of the replicates done (for configurations, their
seeds drawn from a generator of their own); the rank-swap test's p-value from the permutations
done. It is provisional: the final answer replaces it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from evalstore.analysis.statistics import inversion_p, percentile_interval, seed_replicates

if TYPE_CHECKING:
    from evalstore.analysis.configurations import Unit

__all__ = ["Estimate", "Step", "Watch", "begin", "replicates", "swapped", "watching"]


@dataclass(frozen=True)
class Estimate:
    """A running estimate: the 95% interval of the difference and its p-value (None while
    the rank-swap test has not started)."""

    ci_low: float
    ci_high: float
    p_value: float | None


@dataclass(frozen=True)
class Step:
    """One metric of one unit against the baseline, as far as its item resampling has gone.

    Attributes:
        unit, baseline: the two units' labels.
        task, metric, params: what is compared.
        n_a: the baseline's runs (the first ``n_a`` rows of the replicates).
        seed: the comparison's seed.
        total: replicates to draw; ``swaps_total`` permutations of the rank-swap test after
            them (0: the p-value is the bootstrap's).
        done: replicates drawn; ``values``: (runs, done) each run's replicates so far.
        swaps_done, hits: permutations done and those at least as far from 0 as observed.
        n_lists: the lists compared (an interval from fewer than 5 says so where shown).
    """

    unit: str
    baseline: str
    task: str
    metric: str
    params: str
    n_a: int
    seed: int
    total: int
    swaps_total: int = 0
    done: int = 0
    values: np.ndarray | None = field(default=None, compare=False, repr=False)
    swaps_done: int = 0
    hits: int = 0
    n_lists: int = 0

    def estimate(self) -> Estimate | None:
        """The interval and p-value of the replicates (and permutations) done so far; None
        before the second replicate."""
        if self.values is None or self.done < 2:
            return None
        reps = self.values
        rng = np.random.default_rng(self.seed)  # the seeds' draw: provisional
        diffs = seed_replicates(reps[: self.n_a], reps[self.n_a :], rng)
        low, high = percentile_interval(diffs)
        p: float | None
        if not self.swaps_total:
            p = inversion_p(diffs)
        elif self.swaps_done:
            p = (self.hits + 1) / (self.swaps_done + 1)
        else:
            p = None
        return Estimate(low, high, None if p is None or np.isnan(p) else p)


class Watch:
    """What a watched comparison has resampled so far: its steps in order (read from any
    thread with :meth:`steps`); ``begun`` is set when the first step begins."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._steps: list[Step] = []
        self.begun = threading.Event()

    def steps(self) -> list[Step]:
        """The steps so far (the last one under way)."""
        with self._lock:
            return list(self._steps)

    def add(self, step: Step) -> None:
        with self._lock:
            self._steps.append(step)
        self.begun.set()

    def update(self, **changes: object) -> None:
        """Change the current step's fields."""
        with self._lock:
            if self._steps:
                self._steps[-1] = replace(self._steps[-1], **changes)  # type: ignore[arg-type]


_WATCH: ContextVar[Watch | None] = ContextVar("evalstore_watch", default=None)


@contextlib.contextmanager
def watching(watch: Watch) -> Iterator[Watch]:
    """Report the resampling of this thread's comparisons to ``watch`` while in the block."""
    token = _WATCH.set(watch)
    try:
        yield watch
    finally:
        _WATCH.reset(token)


def begin(
    a: Unit, b: Unit, task: str, metric: str, params: str, n_boot: int, seed: int, *, swaps: bool,
    n_lists: int = 0,
) -> None:  # fmt: skip
    """The items of ``b`` against ``a`` are resampled for ``metric`` (``n_boot`` replicates,
    then as many permutations of the rank-swap test when ``swaps``) on ``n_lists`` lists."""
    watch = _WATCH.get()
    if watch is not None:
        step = Step(b.label, a.label, task, metric, params, len(a.run_ids), seed, n_boot)
        watch.add(replace(step, swaps_total=n_boot if swaps else 0, n_lists=n_lists))


def replicates(out: np.ndarray, first: Sequence[int], done: int) -> None:
    """The first ``done`` columns of ``out`` (runs x replicates) are drawn; run ``r``'s row
    is ``out[first[r]]`` (runs alike are computed once)."""
    watch = _WATCH.get()
    if watch is not None:
        watch.update(done=done, values=out[list(first), :done].copy())


def swapped(done: int, hits: int) -> None:
    """``done`` permutations of the rank-swap test drawn, ``hits`` of them as far from 0 as
    observed."""
    watch = _WATCH.get()
    if watch is not None:
        watch.update(swaps_done=done, hits=hits)
