"""The metric registry: each metric once, with its SQL, its NumPy twin and where it applies.

The SQL in ``sql/metrics/<name>.sql`` is what evalstore runs; the NumPy function in
:mod:`evalstore.core` is the readable reference. ``tests/test_parity.py`` walks this registry,
so a metric cannot be added without both and a test.

Every reference has one signature, ``metric.reference(inputs, params) -> Result``: ``inputs``
holds the stored rows of one run as NumPy arrays (:class:`RankedLists` for the ``scores``
source, :class:`KeypointRun` for ``pairs``, :class:`Outcomes` for ``outcomes``; the metric's
``source`` says which), ``params`` the tie policy, ``k`` and the sweep values
(:class:`Params`; a metric reads only those it takes), and the :class:`Result` has one row per
row of the metric's SQL. The VLFeat example, scores [3, 2, 1] and labels [+1, -1, +1] ranked
in input order:

>>> import numpy as np
>>> lists = RankedLists(group=np.zeros(3, dtype=int), scores=np.array([3.0, 2.0, 1.0]),
...                     labels=np.array([1, -1, 1]))
>>> METRICS["ap"].reference(lists, Params(ties="input")).value.tolist()
[0.8333333333333333]
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalstore.core import point_metrics
from evalstore.core.points import TIES
from evalstore.db import queries
from evalstore.errors import InvalidInput
from evalstore.metrics import det_references as det
from evalstore.metrics.outcome_references import iou_micro_reference, iou_reference
from evalstore.metrics.references import (
    EPS,
    SIGMAS,
    THRESHOLDS,
    Inputs,
    KeypointRun,
    Outcomes,
    Params,
    RankedLists,
    Reference,
    Result,
    fraction_reference,
    graded_reference,
    homography_accuracy_reference,
    homography_accuracy_superpoint_reference,
    per_list_reference,
    pr_curve_reference,
    reprojection_error_reference,
)

__all__ = [
    "ALL_TASKS", "BUILT_IN", "DEFAULTS", "HEADLINE", "LIST_NOUN", "METRICS", "Inputs",
    "KeypointRun", "Metric", "Outcomes", "Params", "RankedLists", "Reference", "Result",
    "Sweep", "get", "metrics_for", "register", "unregister",
]  # fmt: skip


# ----------------------------------------------------------------------------- registry


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
        reference: the NumPy twin, ``reference(inputs, params) -> Result`` (:data:`Reference`).
        tasks: the tasks it applies to.
        higher_is_better: the direction of improvement.
        mean_name: the name of its mean over several lists (``ap`` -> ``map``).
        params: the parameters it takes besides runs, task and ties (e.g. ``k``).
        kind: ``per_list`` (one value per list) or ``curve`` (points, not cached).
        source: the table it reads: ``scores`` (ranked lists), ``pairs`` (keypoint matches
            and image pairs), ``outcomes`` (TP/FP/FN counts) or ``detections`` (boxes).
        sweep: for metrics computed at several parameter values at once.
        value_column: the SQL output column holding the value.
        x_column: a curve's x column in the SQL output (``recall``).
        path: a user's metric: its SQL file (:mod:`evalstore.metrics.user`), read anew each
            time, so that an edit makes the values computed before stale.
        defaults: a user's metric: its parameters' default values.
        by_ties: the tie policies the metric computes by another strategy, each with the stem
            of its file under ``sql/metrics/`` (one strategy per file); the other policies
            run ``sql/metrics/<name>.sql``.
        overall: ``mean``: the run's value is the mean over its lists; ``run row``: the SQL's
            row of group_id NULL is the run's value and the others its lists' (TIDE's).
    """

    name: str
    reference: Reference
    tasks: tuple[str, ...]
    higher_is_better: bool
    mean_name: str
    params: tuple[str, ...] = ()
    kind: str = "per_list"
    source: str = "scores"
    sweep: Sweep | None = None
    doc: str = field(default="", compare=False)
    value_column: str = "value"
    x_column: str | None = None
    path: Path | None = field(default=None, compare=False)
    defaults: Mapping[str, Any] = field(default_factory=dict, compare=False)
    by_ties: Mapping[str, str] = field(default_factory=dict, compare=False)
    overall: str = "mean"

    def query_for(self, ties: str) -> queries.Query:
        """The query that computes the metric under the tie policy ``ties``."""
        if self.path is not None:
            return queries.load_file(self.path, f"metrics/{self.name}")
        return queries.load(f"metrics/{self.by_ties.get(ties, self.name)}")

    @property
    def query(self) -> queries.Query:
        """The query under the default tie policy, ``grouped`` (:meth:`query_for` for the
        others)."""
        return self.query_for("grouped")

    @property
    def sql_files(self) -> tuple[str, ...]:
        """The stems of the metric's files under ``sql/metrics/``: its own, then those of
        :attr:`by_ties` (none for a user's metric)."""
        if self.path is not None:
            return ()
        return (self.name, *sorted(set(self.by_ties.values()) - {self.name}))

    @property
    def takes_ties(self) -> bool:
        """Whether the tie policy changes what the metric computes."""
        return bool(self.by_ties) or "$ties" in queries.normalized(self.query.text)

    @property
    def sha(self) -> str:
        """SHA-256 of the SQL that defines the metric (its included parts expanded): of its
        one file, or of all of them where tie policies take different ones."""
        if len(self.sql_files) < 2:
            return self.query.sha
        shas = " ".join(queries.load(f"metrics/{stem}").sha for stem in self.sql_files)
        return hashlib.sha256(shas.encode()).hexdigest()

    @property
    def at_column(self) -> str | None:
        """The SQL output column of :attr:`Result.at`: the sweep's, a curve's x, or None."""
        return self.sweep.column if self.sweep is not None else self.x_column

    def sql_params(self, runs: Sequence[int], task: str, params: Params) -> dict[str, Any]:
        """The values of the SQL's ``$parameters`` for ``runs`` of ``task`` (pass them through
        :func:`evalstore.db.queries.bind`)."""
        values: dict[str, Any] = {"runs": list(runs), "task": task, "ties": params.ties}
        values.update(self.defaults)  # a user's metric's parameters
        values["k"] = params.k if "k" in self.params else None
        if values["k"] is None:  # no --k: a user's metric's default
            values["k"] = self.defaults.get("k")
        if self.sweep is not None:
            at = self.sweep.default if params.at is None else params.at
            values[self.sweep.param] = [float(v) for v in at]
        return values


_ALL = ("verification", "matching", "retrieval", "classification")
_LISTS = (*_ALL, "detection")  # a detection run's lists are made on first use: det_lists.py
_KP, _OUT, _DET = ("keypoints",), ("outcomes",), ("detection",)
_K = ("k",)  # the parameters of a metric with a cut-off


def _per_rank(stem: str) -> dict[str, str]:
    """The file ``stem`` for every tie policy that ranks one item at a time."""
    return {ties: stem for ties in TIES if ties != "grouped"}


def _ranked(
    name: str,
    points: point_metrics.PointsMetric,
    mean_name: str,
    params: tuple[str, ...] = (),
    *,
    higher: bool = True,
    by_ties: Mapping[str, str] | None = None,
) -> Metric:
    """A metric of ranked lists whose NumPy twin is ``points`` (its function in
    :mod:`evalstore.core.point_metrics`) over every list."""
    reference = per_list_reference(points, takes_k="k" in params)
    return Metric(name, reference, _LISTS, higher, mean_name, params, by_ties=by_ties or {})


def _detection(name: str) -> Metric:
    """A metric of detection runs (:mod:`evalstore.metrics.det_references`): COCO's numbers
    (their means named as COCO names them), the VOC APs, TIDE's values (a dAP is better lower;
    the run's value and each category's, the run's not their mean)."""
    if name in det.COCO_METRICS:
        usual, doc = det.COCO_METRICS[name]
        return Metric(
            name, det.coco_reference(name), _DET, True, usual, source="detections", doc=doc
        )
    if name in det.VOC_METRICS:
        doc = det.VOC_METRICS[name][2]
        return Metric(
            name, det.voc_reference(name), _DET, True, f"m{name}", source="detections", doc=doc
        )
    ref, doc = det.tide_reference(name), det.TIDE_METRICS[name][1]
    return Metric(name, ref, _DET, name == "tide_ap", name, source="detections", doc=doc,
                  overall="run row")  # fmt: skip  # the run's dAP is not the categories' mean


def _graded(name: str, mean_name: str, params: tuple[str, ...] = ()) -> Metric:
    """A graded or first-hit metric of ranked lists (:mod:`evalstore.core.graded`)."""
    reference = graded_reference(name, takes_k="k" in params)
    return Metric(name, reference, _LISTS, True, mean_name, params)


METRICS: dict[str, Metric] = {
    m.name: m
    for m in [
        _ranked("ap", point_metrics.ap_of_points, "map", by_ties=_per_rank("ap_ranked")),
        _ranked("ap_voc07", point_metrics.ap_voc07_of_points, "map_voc07"),
        _ranked("ap_voc07_numpy", point_metrics.ap_voc07_numpy_of_points, "map_voc07_numpy"),
        _ranked("ap_voc10", point_metrics.ap_voc10_of_points, "map_voc10"),
        _ranked("ap_coco", point_metrics.ap_coco_of_points, "map_coco"),
        _ranked("precision_at_k", point_metrics.precision_at_k_of_points, "precision_at_k", _K),
        _ranked("recall_at_k", point_metrics.recall_at_k_of_points, "recall_at_k", _K),
        _ranked("fpr95", point_metrics.fpr95_of_points, "fpr95", higher=False),
        _ranked("auc_pr_trapz", point_metrics.auc_pr_trapz_of_points, "mean_auc_pr_trapz"),
        _ranked("roc_auc", point_metrics.roc_auc_of_points, "mean_roc_auc"),
        _ranked("roc_auc_trapz", point_metrics.roc_auc_trapz_of_points, "mean_roc_auc_trapz"),
        _graded("ndcg", "ndcg"),
        _graded("ndcg_at_k", "ndcg_at_k", _K),
        _graded("ndcg_exp", "ndcg_exp"),
        _graded("ndcg_exp_at_k", "ndcg_exp_at_k", _K),
        _graded("recip_rank", "mrr"),
        _graded("r_precision", "r_precision"),
        _graded("hit_at_k", "hit_at_k", _K),
        Metric(
            "pr_curve",
            pr_curve_reference,
            _ALL,
            True,
            "pr_curve",
            kind="curve",
            value_column="precision",
            x_column="recall",
        ),
        Metric(
            "precision_at_sigma",
            fraction_reference("precision_at_sigma", SIGMAS),
            _KP,
            True,
            "precision_at_sigma",
            source="pairs",
            sweep=Sweep("sigma", "sigmas", SIGMAS),
        ),
        Metric(
            "mma",
            fraction_reference("mma", THRESHOLDS),
            _KP,
            True,
            "mma",
            source="pairs",
            sweep=Sweep("threshold", "thresholds", THRESHOLDS),
        ),
        Metric(
            "reprojection_error",
            reprojection_error_reference,
            _KP,
            False,
            "reprojection_error",
            source="pairs",
        ),
        Metric(
            "homography_accuracy",
            homography_accuracy_reference,
            _KP,
            True,
            "homography_accuracy",
            source="pairs",
            sweep=Sweep("eps", "eps", EPS),
        ),
        Metric(
            "homography_accuracy_superpoint",
            homography_accuracy_superpoint_reference,
            _KP,
            True,
            "homography_accuracy_superpoint",
            source="pairs",
            sweep=Sweep("eps", "eps", EPS),
        ),
        Metric("iou", iou_reference, _OUT, True, "iou_macro", source="outcomes"),
        Metric("iou_micro", iou_micro_reference, _OUT, True, "iou_micro", source="outcomes"),
        *(_detection(n) for n in (*det.COCO_METRICS, *det.VOC_METRICS, *det.TIDE_METRICS)),
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
    "detection": tuple(det.COCO_METRICS),
}

#: The headline values of each task (metric, sweep value or None), the columns of
#: ``evalstore leaderboard`` and of the overview dashboard's leaderboard.
HEADLINE: dict[str, tuple[tuple[str, float | None], ...]] = {
    "verification": (("ap", None),),
    "matching": (("ap", None),),
    "retrieval": (("ap", None),),
    "classification": (("ap_voc07", None), ("ap_voc10", None)),
    "keypoints": (("precision_at_sigma", 3.0), ("mma", 3.0), ("homography_accuracy", 3.0)),
    "outcomes": (("iou", None),),
    "detection": (("coco_ap", None), ("coco_ap50", None)),
}

#: Every task, in the order results are reported.
ALL_TASKS: tuple[str, ...] = (*_ALL, *_KP, *_OUT, *_DET)

#: What one ranked list is called in each task (``--by class`` gives per-class values).
LIST_NOUN: dict[str, str] = {
    "verification": "list",
    "matching": "pair",
    "retrieval": "query",
    "classification": "class",
    "keypoints": "pair",
    "outcomes": "group",
    "detection": "category",
}

#: The names of the built-in metrics and of their means: a user's metric takes none of them.
BUILT_IN = frozenset({*METRICS, *(m.mean_name for m in METRICS.values())})


def register(metric: Metric) -> None:
    """Add a metric to the registry (a user's: :mod:`evalstore.metrics.user`); it replaces
    a user's metric of the same name.

    Raises:
        InvalidInput: the name, or its mean's, is a built-in metric's.
    """
    for name in {metric.name, metric.mean_name}:
        if name in BUILT_IN:
            raise InvalidInput(f"metric {name!r} is built in; give yours another name")
    METRICS[metric.name] = metric


def unregister(name: str) -> None:
    """Remove a user's metric from the registry (built-in ones stay)."""
    if name not in BUILT_IN:
        METRICS.pop(name, None)


def get(name: str) -> Metric:
    """The metric called ``name``, in any case; the name of its mean (``map``) is accepted
    too.

    Raises:
        InvalidInput: no such metric.
    """
    by_mean = {m.mean_name: m.name for m in METRICS.values()}
    for candidate in (name, name.lower()):  # metric names are case-insensitive: mAP is map
        key = candidate if candidate in METRICS else by_mean.get(candidate)
        if key is not None:
            return METRICS[key]
    known = sorted({*METRICS, *by_mean})
    close = difflib.get_close_matches(name.lower(), known, n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
    raise InvalidInput(
        f"unknown metric {name!r}; {hint}known: {', '.join(sorted(METRICS))} "
        f"(and their means: {', '.join(sorted(set(by_mean) - set(METRICS)))})"
    )


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
