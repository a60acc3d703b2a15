"""The regression gate of CI pipelines: ``evalstore check``.

It runs :func:`evalstore.analysis.compare.compare_units` on the run (or configuration) and its
baseline, the task's standard metrics (or those named) computed where missing, and fails when
a metric is worse beyond ``--min-effect`` with a Holm-adjusted p-value below ``--alpha``: the
same test ``compare`` reports, so the two never disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import polars as pl

from evalstore.analysis.compare import UNTESTED, compare_units
from evalstore.analysis.configurations import Unit, run_unit, select
from evalstore.errors import InvalidInput
from evalstore.runs.logged import LOGGED_TASK

if TYPE_CHECKING:
    from evalstore.runs.registry import RunRef
    from evalstore.store.facade import Store

__all__ = ["check"]


def check(
    store: Store,
    run: RunRef | None = None,
    baseline: RunRef | None = None,
    *,
    group: str | None = None,
    baseline_group: str | None = None,
    experiment: str | None = None,
    seed_param: str = "seed",
    metrics: Sequence[str] | None = None,
    min_effect: float = 0.0,
    alpha: float = 0.05,
    n_boot: int = 1000,
    seed: int = 0,
    protocol: str | None = None,
    resample: str = "auto",
) -> tuple[bool, list[str], pl.DataFrame]:
    """Regression gate: is ``run`` (or the configuration ``group``) worse than ``baseline``
    (or ``baseline_group``)?

    The comparison is :func:`compare`'s, of the task's standard metrics (or ``metrics``),
    computed where missing. A metric regresses when it is worse (in its direction) by more
    than ``min_effect`` and its Holm-adjusted p-value (over all the metrics checked) is below
    ``alpha``.

    Returns:
        (regressed, one line per metric saying why and a last line saying how many
        comparisons were corrected for, the comparison frame).
    """
    if min_effect < 0:
        raise InvalidInput(f"--min-effect must be >= 0, got {min_effect}")
    if not 0 < alpha < 1:
        raise InvalidInput(f"--alpha must be between 0 and 1, got {alpha}")
    if (run is None) == (group is None):
        raise InvalidInput("check needs a RUN or a -g group (one of them)")
    if (baseline is None) == (baseline_group is None):
        raise InvalidInput("check needs --baseline RUN or --baseline-group KEY=VALUE (one)")

    def unit(ref: RunRef | None, selector: str | None) -> Unit:
        if ref is not None:
            return run_unit(store, ref, seed_param=seed_param)
        return select(store, selector or "", experiment=experiment, seed_param=seed_param)

    frame = compare_units(
        store,
        [unit(baseline, baseline_group), unit(run, group)],
        metrics=metrics,
        n_boot=n_boot,
        seed=seed,
        protocol=protocol,
        resample=resample,
    )
    lines = []
    regressed = False
    for r in frame.filter(pl.col("task") == LOGGED_TASK).iter_rows(named=True):
        lines.append(
            f"untested {r['task']} {r['metric']}: {r['baseline_value']:.4g} -> {r['value']:.4g} "
            f"({r['diff']:+.4g}); a logged value has no per-list statistics, so no test"
        )
    if len(lines) == frame.height:
        raise InvalidInput(
            f"check cannot test logged values ({', '.join(frame['metric'])}): they have no "
            "per-list statistics; name a computed metric too"
        )
    untested, frame = lines[:], frame.filter(pl.col("task") != LOGGED_TASK)
    lines = []
    for r in frame.iter_rows(named=True):
        sign = 1.0 if r["higher_is_better"] else -1.0
        worse_by = -sign * (r["diff"] if r["diff"] is not None else float("nan"))
        p_adj = r["p_adj"] if r["p_adj"] is not None else float("nan")
        significant = bool(p_adj < alpha)
        bad = bool(worse_by > min_effect and significant)
        regressed |= bad
        what = f"{r['task']} {r['metric']}" + (
            "" if r["params"] in ("{}", '{"ties":"grouped"}') else f" {r['params']}"
        )
        if r["resampled"] in UNTESTED:  # TIDE's: the run's value, not a mean over lists
            moved = f"{r['baseline_value']:.4g} -> {r['value']:.4g} ({r['diff']:+.4g})"
            lines.append(f"untested {what}: {moved}; {r['resampled']}")
            continue
        ci = f"95% CI [{r['ci_low']:+.4g}, {r['ci_high']:+.4g}]"
        values = (
            f"{r['baseline_value']:.4g} -> {r['value']:.4g} ({r['diff']:+.4g}, {ci}, "
            f"p_adj {p_adj:.3g})"
        )
        if bad:
            why = (
                f"REGRESSION {what}: {values}; worse by more than {min_effect:g} "
                f"and p_adj < {alpha:g}"
            )
        elif worse_by > min_effect:
            why = f"ok {what}: {values}; worse, but not significantly (p_adj >= {alpha:g})"
        elif worse_by > 0:
            why = f"ok {what}: {values}; worse by at most {min_effect:g}"
        else:
            why = f"ok {what}: {values}; not worse"
        lines.append(why)
    lines += untested
    n = frame.height
    lines.append(
        f"{n} comparison{'s' if n != 1 else ''} (Holm-corrected at alpha {alpha:g}; "
        f"resampled {', '.join(sorted(set(frame['resampled'])))})"
    )
    return regressed, lines, frame
