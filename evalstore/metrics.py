"""The metric registry: each metric once, with its SQL, its NumPy twin and where it applies.

The SQL in ``sql/metrics/<name>.sql`` is what evalstore runs; the NumPy function in
:mod:`evalstore.core` is the readable reference. ``tests/test_parity.py`` walks this registry,
so a metric cannot be added without both and a test.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evalstore import queries
from evalstore.core import matching, ranking
from evalstore.errors import InvalidInput

__all__ = ["ALL_TASKS", "DEFAULTS", "LIST_NOUN", "METRICS", "Metric", "Sweep", "get", "metrics_for"]


@dataclass(frozen=True)
class Sweep:
    """A metric computed at several values of one parameter at once (sigma = 3, 6, 9 px).

    Attributes:
        column: the output column of the SQL holding the value (``sigma``).
        param: the SQL parameter taking the list of values (``sigmas`` -> ``$sigmas``).
        default: the values computed when none are given.
    """

    column: str
    param: str
    default: tuple[float, ...]


@dataclass(frozen=True)
class Metric:
    """One registered metric.

    Attributes:
        name: registry key, also the stem of ``sql/metrics/<name>.sql``.
        reference: the NumPy twin: ``per_list``-style callable of (group, scores, labels,
            n_positives=, ties=, k=, order=) -> (groups, values).
        tasks: the tasks it applies to.
        higher_is_better: the direction of improvement.
        mean_name: the name of its mean over several lists (``ap`` -> ``map``).
        params: the parameters it takes besides runs, task and ties (e.g. ``k``).
        kind: ``per_list`` (one value per list) or ``curve`` (points, not cached).
        source: the table it reads: ``scores`` (ranked lists), ``pairs`` (keypoint matches
            and image pairs) or ``outcomes`` (TP/FP/FN counts).
        sweep: for metrics computed at several parameter values at once.
    """

    name: str
    reference: Callable[..., Any]
    tasks: tuple[str, ...]
    higher_is_better: bool
    mean_name: str
    params: tuple[str, ...] = ()
    kind: str = "per_list"
    source: str = "scores"
    sweep: Sweep | None = None
    doc: str = field(default="", compare=False)

    @property
    def query(self) -> queries.Query:
        return queries.load(f"metrics/{self.name}")

    @property
    def sha(self) -> str:
        """SHA-256 of the SQL that defines the metric (its included parts expanded)."""
        return self.query.sha


def _ranking(name: str) -> Callable[..., Any]:
    def reference(group: Any, scores: Any, labels: Any, **kw: Any) -> Any:
        return ranking.per_list(name, group, scores, labels, **kw)

    reference.__name__ = f"per_list_{name}"
    reference.__doc__ = getattr(ranking, name).__doc__
    return reference


def _pr_curve(group: Any, scores: Any, labels: Any, **kw: Any) -> ranking.Points:
    kw.pop("k", None)
    return ranking.ranking_points(group, scores, labels, **kw)


_ALL = ("verification", "matching", "retrieval", "classification")
_KP = ("keypoints",)
_OUT = ("outcomes",)

METRICS: dict[str, Metric] = {
    m.name: m
    for m in [
        Metric("ap", _ranking("ap"), _ALL, True, "map"),
        Metric("ap_voc07", _ranking("ap_voc07"), _ALL, True, "map_voc07"),
        Metric("ap_voc10", _ranking("ap_voc10"), _ALL, True, "map_voc10"),
        Metric("ap_coco", _ranking("ap_coco"), _ALL, True, "map_coco"),
        Metric("precision_at_k", _ranking("precision_at_k"), _ALL, True, "precision_at_k", ("k",)),
        Metric("recall_at_k", _ranking("recall_at_k"), _ALL, True, "recall_at_k", ("k",)),
        Metric("fpr95", _ranking("fpr95"), _ALL, False, "fpr95"),
        Metric("pr_curve", _pr_curve, _ALL, True, "pr_curve", kind="curve"),
        Metric(
            "precision_at_sigma",
            matching.precision_at_sigma,
            _KP,
            True,
            "precision_at_sigma",
            source="pairs",
            sweep=Sweep("sigma", "sigmas", (3.0, 6.0, 9.0)),
        ),
        Metric(
            "mma",
            matching.mma,
            _KP,
            True,
            "mma",
            source="pairs",
            sweep=Sweep("threshold", "thresholds", tuple(float(t) for t in range(1, 11))),
        ),
        Metric(
            "reprojection_error",
            matching.reprojection_error,
            _KP,
            False,
            "reprojection_error",
            source="pairs",
        ),
        Metric(
            "homography_accuracy",
            matching.homography_accuracy,
            _KP,
            True,
            "homography_accuracy",
            source="pairs",
            sweep=Sweep("eps", "eps", (1.0, 3.0, 5.0)),
        ),
        Metric("iou", matching.iou, _OUT, True, "iou_macro", source="outcomes"),
        Metric("iou_micro", matching.iou_micro, _OUT, True, "iou_micro", source="outcomes"),
    ]
}

#: The standard metrics of each task, computed when ``eval`` is given no ``--metric``.
DEFAULTS: dict[str, tuple[str, ...]] = {
    "verification": ("ap", "fpr95"),
    "matching": ("ap",),
    "retrieval": ("ap",),
    "classification": ("ap_voc07", "ap_voc10"),
    "keypoints": ("precision_at_sigma", "mma", "reprojection_error", "homography_accuracy"),
    "outcomes": ("iou", "iou_micro"),
}

#: Every task, in the order results are reported.
ALL_TASKS: tuple[str, ...] = (*_ALL, *_KP, *_OUT)

#: What one ranked list is called in each task (``--by class`` gives per-class values).
LIST_NOUN: dict[str, str] = {
    "verification": "list",
    "matching": "pair",
    "retrieval": "query",
    "classification": "class",
    "keypoints": "pair",
    "outcomes": "group",
}

_BY_MEAN_NAME = {m.mean_name: m.name for m in METRICS.values()}


def get(name: str) -> Metric:
    """The metric called ``name``; the name of its mean (``map``) is accepted too.

    Raises:
        InvalidInput: no such metric.
    """
    key = name if name in METRICS else _BY_MEAN_NAME.get(name)
    if key is None:
        raise InvalidInput(
            f"unknown metric {name!r}; known: {', '.join(sorted(METRICS))} "
            f"(and their means: {', '.join(sorted(set(_BY_MEAN_NAME) - set(METRICS)))})"
        )
    return METRICS[key]


def metrics_for(task: str, names: list[str] | None) -> list[Metric]:
    """The cached (per-list) metrics to compute for ``task``: ``names`` or the task defaults."""
    chosen = [get(n) for n in names] if names else [METRICS[n] for n in DEFAULTS[task]]
    out = []
    for m in chosen:
        if m.kind != "per_list":
            raise InvalidInput(f"{m.name} is a curve, not a value; query it with `evalstore sql`")
        if task in m.tasks and m not in out:
            out.append(m)
    return out
