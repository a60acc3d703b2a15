"""The metric catalogue: each built-in metric's name, SQL, tasks, parameters and defaults,
without its NumPy twin.

This is what a command needs to parse and check ``-m``, ``--ties``, ``--protocol`` and
``--k`` and to find a cached value (a metric's definition SHA is its SQL's): it imports
neither NumPy nor the reference core, so ``evalstore eval`` of cached values starts in DuckDB's
time. :mod:`evalstore.metrics.registry` builds on it: the same metrics, each with its twin
attached (``METRICS``), and users' metrics registered there.

>>> CATALOGUE["ap"].mean_name, CATALOGUE["ap"].by_ties["input"]
('map', 'ap_ranked')
>>> find(CATALOGUE, "mAP").name
'ap'
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalstore.db import queries
from evalstore.errors import InvalidInput
from evalstore.metrics import pose_catalogue as pose
from evalstore.metrics import single_label_catalogue as single
from evalstore.metrics.det_names import COCO_METRICS, TIDE_METRICS, VOC_METRICS
from evalstore.metrics.multilabel_names import MULTILABEL_METRICS, MULTILABEL_THRESHOLDS

if TYPE_CHECKING:
    from evalstore.metrics.references import Inputs, Params, Reference, Result

__all__ = [
    "ALL_TASKS", "BUILT_IN", "CATALOGUE", "COCO_METRICS", "DEFAULTS", "EPS", "HEADLINE",
    "LIST_NOUN", "MULTILABEL_METRICS", "MULTILABEL_THRESHOLDS", "SIGMAS", "THRESHOLDS",
    "TIDE_METRICS", "TIES", "VOC_METRICS", "Metric", "Sweep", "find", "for_task", "unattached",
]  # fmt: skip

#: The tie policies (:data:`evalstore.core.points.TIES`, which the core defines; a test
#: checks that the two agree).
TIES = ("grouped", "optimistic", "pessimistic", "input", "docid")

#: The default sweep values: precision_at_sigma's sigmas (px), mma's thresholds (px) and
#: homography_accuracy's corner errors.
SIGMAS = (3.0, 6.0, 9.0)
THRESHOLDS = tuple(float(t) for t in range(1, 11))
EPS = (1.0, 3.0, 5.0)


def unattached(inputs: Inputs, params: Params) -> Result:
    """The reference of a catalogue entry: none (the registry attaches the NumPy twin)."""
    raise NotImplementedError("the catalogue holds no twin: use evalstore.metrics.registry")


@dataclass(frozen=True)
class Sweep:
    """A metric computed at several values of one parameter at once (sigma = 3, 6, 9 px).

    Attributes:
        column: the output column of the SQL holding the value (``sigma``).
        param: the SQL parameter taking the list of values (``sigmas`` -> ``$sigmas``).
        default: the values computed when none are given.
        whole: the values are whole numbers >= 1 (ece's bins).
        minimum: the least value accepted (None: any finite value, as a threshold on logits).
    """

    column: str
    param: str
    default: tuple[float, ...]
    whole: bool = False
    minimum: float | None = 0.0


@dataclass(frozen=True)
class Metric:
    """One registered metric.

    Attributes:
        name: registry key, also the stem of ``sql/metrics/<name>.sql``.
        reference: the NumPy twin, ``reference(inputs, params) -> Result`` (:data:`Reference`;
            :func:`unattached` in the :data:`CATALOGUE`).
        tasks: the tasks it applies to.
        higher_is_better: the direction of improvement.
        mean_name: the name of its mean over several lists (``ap`` -> ``map``).
        params: the parameters it takes besides runs, task and ties (e.g. ``k``).
        kind: ``per_list`` (one value per list) or ``curve`` (points, not cached).
        source: the table it reads: ``scores`` (ranked lists), ``pairs`` (keypoint matches
            and image pairs), ``cameras`` (image pairs with cameras, their matches and pose
            estimates), ``outcomes`` (TP/FP/FN counts) or ``detections`` (boxes).
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
        checks: named queries run before the SQL, each returning the first row its metric
            cannot take (:func:`evalstore.analysis.eval_store.store_values` raises on it).
        default_k: the cut-off when none is given (else the shared default, 10).
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
    checks: tuple[str, ...] = ()
    default_k: int | None = None

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
        if values["k"] is None:  # no --k: a user's metric's default, or the metric's own
            values["k"] = self.defaults.get("k", self.default_k)
        if self.sweep is not None:
            at = self.sweep.default if params.at is None else params.at
            values[self.sweep.param] = [float(v) for v in at]
        if self.name in pose.RULED:  # the estimation setting, the AUC's code
            values.update(pose.rules_of(params.pose).binds())
        return values


_ALL = ("verification", "matching", "retrieval", "classification")
_LISTS = (*_ALL, "detection")  # a detection run's lists are made on first use: det_lists.py
_KP, _OUT, _DET = ("keypoints",), ("outcomes",), ("detection",)
_K = ("k",)  # the parameters of a metric with a cut-off


def _ranked(
    name: str,
    mean_name: str,
    params: tuple[str, ...] = (),
    *,
    higher: bool = True,
    by_ties: Mapping[str, str] | None = None,
) -> Metric:
    """A metric of ranked lists (its twin: its function in
    :mod:`evalstore.core.point_metrics` over every list, or :mod:`evalstore.core.graded`)."""
    return Metric(name, unattached, _LISTS, higher, mean_name, params, by_ties=by_ties or {})


def _per_rank(stem: str) -> dict[str, str]:
    """The file ``stem`` for every tie policy that ranks one item at a time."""
    return {ties: stem for ties in TIES if ties != "grouped"}


def _keypoints(name: str, higher: bool = True, sweep: Sweep | None = None) -> Metric:
    return Metric(name, unattached, _KP, higher, name, source="pairs", sweep=sweep)


def _pose(name: str) -> Metric:
    """A metric of relative poses or of the homographies' corner errors as matcher papers
    report them (:mod:`evalstore.metrics.pose_catalogue`): an AUC or a median is the run's
    value (``run row``), a precision or a score the mean over pairs."""
    line = pose.POSE[name]
    sweep = None if line.sweep is None else Sweep("threshold", "thresholds", line.sweep,
                                                  whole=line.whole)  # fmt: skip
    return Metric(name, unattached, _KP, line.higher_is_better, name, source=line.source,
                  sweep=sweep, doc=line.doc, overall=line.overall)  # fmt: skip


def _detection(name: str) -> Metric:
    """A metric of detection runs: COCO's numbers (their means named as COCO names them),
    the VOC APs, TIDE's values (a dAP is better lower; the run's value and each category's,
    the run's not their mean)."""
    if name in COCO_METRICS:
        usual, doc = COCO_METRICS[name]
        return Metric(name, unattached, _DET, True, usual, source="detections", doc=doc)
    if name in VOC_METRICS:
        doc = VOC_METRICS[name][2]
        return Metric(name, unattached, _DET, True, f"m{name}", source="detections", doc=doc)
    doc = TIDE_METRICS[name][1]
    return Metric(name, unattached, _DET, name == "tide_ap", name, source="detections",
                  doc=doc, overall="run row")  # fmt: skip  # the run's dAP is not the mean


def _single_label(name: str) -> Metric:
    """A metric of single-label classification runs (one list per class, one +1 per sample;
    :mod:`evalstore.metrics.single_label_catalogue`), checked before it is computed."""
    line, ece = single.SINGLE_LABEL[name], name == "ece"
    k = ("k",) if name == "topk_accuracy" else ()
    bins = Sweep("bins", "bins", single.BINS, whole=True) if ece else None
    return Metric(name, unattached, ("classification",), line.higher_is_better, name, k,
                  doc=line.doc, overall=line.overall, default_k=single.TOPK_DEFAULT if k else None,
                  checks=(single.SAMPLE_CHECK, *([single.PROBABILITY_CHECK] if ece else [])),
                  sweep=bins)  # fmt: skip


def _multilabel(name: str) -> Metric:
    """ML-GCN's CP ... OF1 of a classification run at each threshold, or of each image's top
    k (``_at_k``): the run's value is its SQL's row (not a mean over classes)."""
    sweep = Sweep("threshold", "thresholds", MULTILABEL_THRESHOLDS, minimum=None)
    top_k = name.endswith("_at_k")
    return Metric(name, unattached, ("classification",), True, name, _K if top_k else (),
                  sweep=sweep, doc=MULTILABEL_METRICS[name], overall="run row",
                  default_k=3 if top_k else None)  # fmt: skip


#: Every built-in metric, without its twin (the registry's ``METRICS`` has them attached).
CATALOGUE: dict[str, Metric] = {
    m.name: m
    for m in [
        _ranked("ap", "map", by_ties=_per_rank("ap_ranked")),
        _ranked("ap_voc07", "map_voc07"),
        _ranked("ap_voc07_numpy", "map_voc07_numpy"),
        _ranked("ap_voc10", "map_voc10"),
        _ranked("ap_coco", "map_coco"),
        _ranked("precision_at_k", "precision_at_k", _K),
        _ranked("recall_at_k", "recall_at_k", _K),
        _ranked("fpr95", "fpr95", higher=False),
        _ranked("auc_pr_trapz", "mean_auc_pr_trapz"),
        _ranked("roc_auc", "mean_roc_auc"),
        _ranked("roc_auc_trapz", "mean_roc_auc_trapz"),
        _ranked("ndcg", "ndcg"),
        _ranked("ndcg_at_k", "ndcg_at_k", _K),
        _ranked("ndcg_exp", "ndcg_exp"),
        _ranked("ndcg_exp_at_k", "ndcg_exp_at_k", _K),
        _ranked("recip_rank", "mrr"),
        _ranked("r_precision", "r_precision"),
        _ranked("hit_at_k", "hit_at_k", _K),
        Metric(
            "pr_curve",
            unattached,
            _ALL,
            True,
            "pr_curve",
            kind="curve",
            value_column="precision",
            x_column="recall",
        ),
        _keypoints("precision_at_sigma", sweep=Sweep("sigma", "sigmas", SIGMAS)),
        _keypoints("mma", sweep=Sweep("threshold", "thresholds", THRESHOLDS)),
        _keypoints("reprojection_error", higher=False),
        _keypoints("homography_accuracy", sweep=Sweep("eps", "eps", EPS)),
        _keypoints("homography_accuracy_superpoint", sweep=Sweep("eps", "eps", EPS)),
        *(_pose(n) for n in pose.POSE),
        Metric("iou", unattached, _OUT, True, "iou_macro", source="outcomes"),
        Metric("iou_micro", unattached, _OUT, True, "iou_micro", source="outcomes"),
        *(_detection(n) for n in (*COCO_METRICS, *VOC_METRICS, *TIDE_METRICS)),
        *(_single_label(n) for n in single.SINGLE_LABEL),
        *(_multilabel(n) for n in MULTILABEL_METRICS),
    ]
}

#: The standard metrics of each task, computed when ``eval`` is given no ``--metric``.
DEFAULTS: dict[str, tuple[str, ...]] = {
    "verification": ("ap", "fpr95"),
    "matching": ("ap",),
    "retrieval": ("ap",),
    "classification": ("ap", "ap_voc07", "ap_voc10"),
    "keypoints": (
        "precision_at_sigma",
        "mma",
        "reprojection_error",
        "homography_accuracy",
        "pose_auc",
        "pose_error",
    ),
    "outcomes": ("iou", "iou_micro"),
    "detection": tuple(COCO_METRICS),
}

#: The headline values of each task (metric, sweep value or None), the columns of
#: ``evalstore leaderboard`` and of the overview dashboard's leaderboard.
HEADLINE: dict[str, tuple[tuple[str, float | None], ...]] = {
    "verification": (("ap", None),),
    "matching": (("ap", None),),
    "retrieval": (("ap", None),),
    "classification": (("ap", None), ("ap_voc07", None), ("ap_voc10", None)),
    "keypoints": (
        ("precision_at_sigma", 3.0),
        ("mma", 3.0),
        ("homography_accuracy", 3.0),
        ("pose_auc", 5.0),
    ),
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
BUILT_IN = frozenset({*CATALOGUE, *(m.mean_name for m in CATALOGUE.values())})


def find(table: Mapping[str, Metric], name: str) -> Metric:
    """The metric of ``table`` called ``name``, in any case; the name of its mean (``map``)
    is accepted too.

    Raises:
        InvalidInput: no such metric.
    """
    by_mean = {m.mean_name: m.name for m in table.values()}
    for candidate in (name, name.lower()):  # metric names are case-insensitive: mAP is map
        key = candidate if candidate in table else by_mean.get(candidate)
        if key is not None:
            return table[key]
    known = sorted({*table, *by_mean})
    family = [k for k in known if k.startswith(f"{name.lower()}_")]  # f1: f1_macro, f1_micro
    close = family[:3] or difflib.get_close_matches(name.lower(), known, n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
    raise InvalidInput(
        f"unknown metric {name!r}; {hint}known: {', '.join(sorted(table))} "
        f"(and their means: {', '.join(sorted(set(by_mean) - set(table)))})"
    )


def for_task(table: Mapping[str, Metric], task: str, names: list[str] | None) -> list[Metric]:
    """The cached (per-list) metrics of ``table`` to compute for ``task``: ``names`` or the
    task defaults."""
    chosen = [find(table, n) for n in names] if names else [table[n] for n in DEFAULTS[task]]
    out = []
    for m in chosen:
        if m.kind != "per_list":
            raise InvalidInput(f"{m.name} is a curve, not a value; query it with `evalstore sql`")
        if task in m.tasks and m not in out:
            out.append(m)
    return out
