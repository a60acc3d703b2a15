"""The metric registry: each metric once, with its SQL, its NumPy twin and where it applies.

The SQL in ``sql/metrics/<name>.sql`` is what evalstore runs; the NumPy function in
:mod:`evalstore.core` is the readable reference. Each metric is declared in
:mod:`evalstore.metrics.catalogue` (its SQL, tasks, parameters, without NumPy); this module
attaches its twin. ``tests/test_parity.py`` walks this registry,
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

from dataclasses import replace

from evalstore.core import multilabel, point_metrics
from evalstore.errors import InvalidInput
from evalstore.metrics import det_references as det
from evalstore.metrics.catalogue import (
    ALL_TASKS,
    BUILT_IN,
    CATALOGUE,
    DEFAULTS,
    HEADLINE,
    LIST_NOUN,
    SIGMAS,
    THRESHOLDS,
    Metric,
    Sweep,
    find,
    for_task,
)
from evalstore.metrics.multilabel_references import multilabel_reference
from evalstore.metrics.outcome_references import iou_micro_reference, iou_reference
from evalstore.metrics.pose_references import POSE_TWINS
from evalstore.metrics.references import (
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
from evalstore.metrics.single_label_catalogue import SINGLE_LABEL
from evalstore.metrics.single_label_references import single_label_reference

__all__ = [
    "ALL_TASKS", "BUILT_IN", "DEFAULTS", "HEADLINE", "LIST_NOUN", "METRICS", "Inputs",
    "KeypointRun", "Metric", "Outcomes", "Params", "RankedLists", "Reference", "Result",
    "Sweep", "get", "metrics_for", "register", "unregister",
]  # fmt: skip

#: The ranking metrics whose twin is a function of :mod:`evalstore.core.point_metrics` over
#: every list (with ``k`` where the metric takes it).
_POINTS: dict[str, point_metrics.PointsMetric] = {
    "ap": point_metrics.ap_of_points,
    "ap_voc07": point_metrics.ap_voc07_of_points,
    "ap_voc07_numpy": point_metrics.ap_voc07_numpy_of_points,
    "ap_voc10": point_metrics.ap_voc10_of_points,
    "ap_coco": point_metrics.ap_coco_of_points,
    "precision_at_k": point_metrics.precision_at_k_of_points,
    "recall_at_k": point_metrics.recall_at_k_of_points,
    "fpr95": point_metrics.fpr95_of_points,
    "auc_pr_trapz": point_metrics.auc_pr_trapz_of_points,
    "roc_auc": point_metrics.roc_auc_of_points,
    "roc_auc_trapz": point_metrics.roc_auc_trapz_of_points,
}

#: The graded and first-hit metrics of ranked lists (:mod:`evalstore.core.graded`).
_GRADED = ("ndcg", "ndcg_at_k", "ndcg_exp", "ndcg_exp_at_k", "recip_rank", "r_precision",
           "hit_at_k")  # fmt: skip

#: The other metrics' twins.
_TWINS: dict[str, Reference] = {
    "pr_curve": pr_curve_reference,
    "precision_at_sigma": fraction_reference("precision_at_sigma", SIGMAS),
    "mma": fraction_reference("mma", THRESHOLDS),
    "reprojection_error": reprojection_error_reference,
    "homography_accuracy": homography_accuracy_reference,
    "homography_accuracy_superpoint": homography_accuracy_superpoint_reference,
    "iou": iou_reference,
    "iou_micro": iou_micro_reference,
    **POSE_TWINS,
    **{name: single_label_reference(name) for name in SINGLE_LABEL},
    **{name: multilabel_reference(name) for name in multilabel.NAMES},
    **{f"{name}_at_k": multilabel_reference(name, top_k=True) for name in multilabel.NAMES},
}


def _twin(metric: Metric) -> Reference:
    """The NumPy twin of a catalogue metric."""
    takes_k = "k" in metric.params
    if metric.name in _POINTS:
        return per_list_reference(_POINTS[metric.name], takes_k=takes_k)
    if metric.name in _GRADED:
        return graded_reference(metric.name, takes_k=takes_k)
    if metric.name in det.COCO_METRICS:
        return det.coco_reference(metric.name)
    if metric.name in det.VOC_METRICS:
        return det.voc_reference(metric.name)
    if metric.name in det.TIDE_METRICS:
        return det.tide_reference(metric.name)
    return _TWINS[metric.name]  # a KeyError at import: a catalogue metric without a twin


#: Every metric, built-in (the :data:`~evalstore.metrics.catalogue.CATALOGUE` with its twins
#: attached) and users' own (:func:`register`).
METRICS: dict[str, Metric] = {name: replace(m, reference=_twin(m)) for name, m in CATALOGUE.items()}


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
    return find(METRICS, name)


def metrics_for(task: str, names: list[str] | None) -> list[Metric]:
    """The cached (per-list) metrics to compute for ``task``: ``names`` or the task defaults."""
    return for_task(METRICS, task, names)
