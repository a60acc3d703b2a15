"""What :func:`evalstore.analysis.evaluate.evaluate` computes and reads, found before anything
is computed: the tie policy and cut-off, the runs, each step (task, metric, the runs holding
it), each step's parameter sets, and which runs' values are cached and current.

It imports neither polars nor NumPy, and reads metrics from the table it is given (the
registry's ``METRICS``, or the :data:`~evalstore.metrics.catalogue.CATALOGUE` of the built-in
ones): ``evalstore eval`` of cached values applies these same rules, with DuckDB alone, before
it imports the rest (``evalstore/cli/cached_eval.py``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalstore.analysis.step_runs import step_map
from evalstore.db import queries
from evalstore.errors import InvalidInput
from evalstore.metrics import protocols
from evalstore.metrics.catalogue import ALL_TASKS, LIST_NOUN, TIES, Metric, for_task
from evalstore.metrics.pose_catalogue import ESTIMATED
from evalstore.runs.registry import resolve_many
from evalstore.runs.selection import check_slice_keys

if TYPE_CHECKING:
    from evalstore.db.connection import Database
    from evalstore.runs.registry import RunRef

__all__ = [
    "DEFAULT_K",
    "RESULT_COLUMNS",
    "Plan",
    "param_sets",
    "params_text",
    "pending_runs",
    "plan",
    "resolve_ties",
    "run_ids",
    "sweep_values",
]

DEFAULT_K = 10
RESULT_COLUMNS = [
    "run", "run_id", "experiment", "task", "metric", "slice", "value", "n_lists", "n_skipped",
    "params", "protocol", "definition_sha", "engine", "stale",
]  # fmt: skip

#: The query that finds the runs holding each source's rows.
_PRESENCE = {
    "scores": "eval/runs_with_task",
    "pairs": "eval/runs_with_pairs",
    "outcomes": "eval/runs_with_outcomes",
    "detections": "eval/runs_with_detections",
    "cameras": "eval/runs_with_cameras",
    "truth": "eval/runs_with_point_truth",
}

#: The built-in metrics that read where each match should land (a true homography, a given
#: or derived point): a run whose pairs have none (cameras only) is not theirs.
_POINT_TRUTH = frozenset(
    {"precision_at_sigma", "mma", "reprojection_error", "homography_accuracy",
     "homography_accuracy_superpoint", "homography_auc"}
)  # fmt: skip


@dataclass(frozen=True)
class Plan:
    """The steps of one call: the tie policy, the cut-off, the protocol, the runs named and
    each (task, metric, runs of that task) to compute or read, in the order reported;
    ``stepped``: the runs named that have steps, each with the step run that stands for it
    (its last, or the one at the step asked for: :mod:`~evalstore.analysis.step_runs`)."""

    ties: str
    k: int
    protocol: protocols.Protocol | None
    run_ids: list[int]
    steps: list[tuple[str, Metric, list[int]]]
    k_given: bool = True
    stepped: dict[int, int] = field(default_factory=dict)

    def real(self, ids: Sequence[int]) -> list[int]:
        """The runs whose rows ``ids`` are read from: a run with steps, its step run."""
        return [self.stepped.get(i, i) for i in ids]

    def k_for(self, metric: Metric) -> int:
        """The cut-off of ``metric``: the one given (or the protocol's), else the metric's own
        default (``topk_accuracy``: 5; ``cp_at_k``: 3), else :data:`DEFAULT_K`."""
        if self.k_given or metric.default_k is None:
            return self.k
        return metric.default_k


def params_text(
    metric: Metric, ties: str, k: int, at: float | None = None, protocol: str | None = None
) -> str:
    """The ``params`` a value is stored under (part of its cache key)."""
    values: dict[str, Any] = {} if protocol is None else {"protocol": protocol}
    if metric.source == "scores":
        values["ties"] = ties
    if "k" in metric.params:
        values["k"] = k
    if metric.sweep is not None:
        values[metric.sweep.column] = at
    if metric.name in ESTIMATED:  # the setting of the poses it reads: the protocol's
        chosen = None if protocol is None else protocols.get(protocol)
        values.update(protocols.pose_rules(chosen).params())
    return json.dumps(values, sort_keys=True, separators=(",", ":"))


def run_ids(store: Database, runs: Sequence[RunRef] | None, all_runs: bool) -> list[int]:
    """The ids of ``runs`` (each once, in order), or of every run with ``all_runs``."""
    if all_runs:
        return [int(r[0]) for r in queries.fetch_rows(store.con, "eval/all_run_ids")]
    if not runs:
        raise InvalidInput("name at least one run, or pass --all")
    return list(dict.fromkeys(resolve_many(store, runs)))  # one query for all of them


def resolve_ties(ties: str | None, protocol: protocols.Protocol | None) -> str:
    """The tie policy of a call: the one given, else the protocol's, else ``grouped``.

    Raises:
        InvalidInput: a given policy that contradicts the protocol's.
    """
    if protocol is None:
        return "grouped" if ties is None else ties
    if ties is not None and ties != protocol.ties:
        raise InvalidInput(
            f"--ties {ties} contradicts --protocol {protocol.name}, which ranks ties "
            f"{protocol.ties!r}; leave --ties out"
        )
    return protocol.ties


def plan(
    store: Database,
    runs: Sequence[RunRef] | None,
    *,
    table: Mapping[str, Metric],
    metrics: Sequence[str] | None,
    ties: str | None,
    k: int | None,
    by: Sequence[str],
    all_runs: bool,
    protocol: str | None,
    step: int | None = None,
) -> Plan | None:
    """The steps of :func:`~evalstore.analysis.evaluate.evaluate` (its checks, in its order),
    or None when no run is named (``--all`` of an empty store). A run with steps is planned
    as its step run at ``step`` (default: its last step).

    Raises:
        InvalidInput: an unknown protocol, tie policy, metric or slice key, a cut-off < 1, no
            run named, no requested metric that applies to the runs, or a run without an
            evaluation at ``step``.
    """
    chosen = None if protocol is None else protocols.get(protocol)
    ties = resolve_ties(ties, chosen)
    if chosen is not None:
        k = chosen.k if k is None else k
    if ties not in TIES:
        raise InvalidInput(f"unknown --ties {ties!r}; use one of {', '.join(TIES)}")
    if k is not None and k < 1:
        raise InvalidInput(f"--k must be >= 1, got {k}")
    k_given = k is not None
    k = DEFAULT_K if k is None else k
    ids = run_ids(store, runs, all_runs)
    if not ids:
        return None
    stepped = step_map(store, ids, step)
    back = {real: run for run, real in stepped.items()}
    probe = [stepped.get(i, i) for i in ids]
    check_slice_keys(store, probe, by, {*LIST_NOUN.values(), "list"})
    steps = []
    for task in ALL_TASKS:
        found: dict[str, list[int]] = {}
        for m in _candidates(table, task, metrics, chosen):
            # a detection run's ranked lists are made on first use (analysis/det_lists.py)
            source = "detections" if task == "detection" else m.source
            source = "truth" if m.name in _POINT_TRUTH else source
            if source not in found:
                keys = {"runs": probe, "task": task}
                rows = queries.fetch_rows(store.con, _PRESENCE[source], keys)
                found[source] = sorted(back.get(int(r[0]), int(r[0])) for r in rows)
            if found[source]:
                steps.append((task, m, found[source]))
    if not steps:
        if chosen is not None:
            raise InvalidInput(
                f"--protocol {chosen.name} covers the tasks {', '.join(chosen.tasks)}; these "
                "runs have none of them (or not the requested metrics)"
            )
        raise InvalidInput("none of the requested metrics applies to the tasks of these runs")
    return Plan(ties, k, chosen, ids, steps, k_given, stepped)


def _candidates(
    table: Mapping[str, Metric],
    task: str,
    metrics: Sequence[str] | None,
    protocol: protocols.Protocol | None,
) -> list[Metric]:
    """The metrics to compute for ``task``: those named, else the protocol's, else the task's
    defaults; under a protocol, only metrics it reports."""
    own = () if protocol is None else protocol.metrics.get(task, ())
    if protocol is None or not metrics:
        if protocol is not None and not own:
            return []
        return for_task(table, task, list(metrics or own))
    named = for_task(table, task, list(metrics))
    every = {m for names in protocol.metrics.values() for m in names}
    foreign = [m.name for m in named if m.name not in every]
    if foreign:
        raise InvalidInput(
            f"--protocol {protocol.name} does not report {foreign[0]} (it reports "
            f"{', '.join(sorted(every))})"
        )
    return [m for m in named if m.name in own]


def sweep_values(
    metric: Metric,
    sweeps: Mapping[str, Sequence[float]],
    protocol: protocols.Protocol | None = None,
) -> list[float]:
    """The values of ``metric``'s sweep to compute: those given, else the protocol's (mlgcn's
    threshold 0), else its defaults.

    Raises:
        InvalidInput: a value that is not finite, or below the sweep's ``minimum`` (a whole
            number >= 1 for a sweep of whole numbers).
    """
    if metric.sweep is None:
        return []
    column = metric.sweep.column
    own = metric.sweep.default
    if protocol is not None and metric.name in protocol.sweeps:
        own = protocol.sweeps[metric.name]
    values = [float(v) for v in sweeps.get(column, own)]
    low = metric.sweep.minimum
    if not values or any(not math.isfinite(v) or (low is not None and v < low) for v in values):
        at_least = "" if low is None else f" >= {low:g}"
        raise InvalidInput(f"--{column} needs finite values{at_least}, got {values}")
    if metric.sweep.whole and any(v < 1 or v != int(v) for v in values):
        raise InvalidInput(f"--{column} needs whole numbers >= 1, got {values}")
    return sorted(set(values))


def param_sets(metric: Metric, chosen: Plan, at: Sequence[float]) -> list[str]:
    """The ``params`` of each value of a step: one per sweep value, or one."""
    name = None if chosen.protocol is None else chosen.protocol.name
    k = chosen.k_for(metric)
    return [params_text(metric, chosen.ties, k, v, name) for v in ([*at] if at else [None])]


def pending_runs(
    store: Database,
    task: str,
    metric: Metric,
    ids: list[int],
    params: Sequence[str],
    engine: str = "duckdb",
    recompute: bool = False,
) -> list[int]:
    """The runs of ``ids`` whose values of ``metric`` for ``task`` must be computed: all of
    them with ``recompute``, else those not cached and current under every one of
    ``params`` (computed by the same SQL, its definition SHA, and engine)."""
    if recompute:
        return list(ids)
    fresh = set(ids)
    for text in params:
        keys = {
            "runs": ids,
            "task": task,
            "metric": metric.name,
            "params": text,
            "sha": metric.sha,
            "engine": engine,
        }
        fresh &= {int(r[0]) for r in queries.fetch_rows(store.con, "eval/cached_overall", keys)}
    return [i for i in ids if i not in fresh]
