"""The uniform signature of the metrics' NumPy references, and the adapters that give every
function of :mod:`evalstore.core` that signature.

``reference(inputs, params) -> Result``: ``inputs`` holds the stored rows of one run as NumPy
arrays (:class:`RankedLists` for the ``scores`` source, :class:`KeypointRun` for ``pairs``,
:class:`Outcomes` for ``outcomes``, :class:`~evalstore.core.detection.DetectionRun` for
``detections``), ``params`` the tie policy, ``k`` and the sweep values
(:class:`Params`; a metric reads only those it takes), and the :class:`Result` has one row
per row of the metric's SQL. :mod:`evalstore.metrics.registry` registers one per metric.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalstore.core import graded, matching, point_metrics, ranking
from evalstore.core.detection import DetectionRun
from evalstore.core.points import docid_order
from evalstore.errors import InvalidInput
from evalstore.metrics.catalogue import EPS, SIGMAS, THRESHOLDS
from evalstore.metrics.pose_catalogue import PoseRules
from evalstore.metrics.pose_inputs import PoseRun

__all__ = [
    "EPS",
    "SIGMAS",
    "THRESHOLDS",
    "Inputs",
    "KeypointRun",
    "Outcomes",
    "Params",
    "RankedLists",
    "Reference",
    "Result",
    "fraction_reference",
    "graded_reference",
    "homography_accuracy_reference",
    "homography_accuracy_superpoint_reference",
    "per_list_reference",
    "pr_curve_reference",
    "reprojection_error_reference",
]


@dataclass(frozen=True)
class RankedLists:
    """The ranked lists of one run and task (tables ``scores`` and ``groups``), as arrays.

    Attributes:
        group: (n,) the list (``group_id``) of each item: any ids of one sortable kind (None
            for a task's single unnamed list).
        scores: (n,) float64, higher = more confident; ``-inf`` = not retrieved (NULL stored).
        labels: (n,) +1 positive, -1 negative, 0 ignored.
        order: (n,) integer input order (``seq``) for ``ties="input"``; None = array order.
        items: (n,) the item ids as text, for ``ties="docid"`` (trec_eval's order).
        gains: (n,) float64 relevance grades (NaN where none was stored), for the graded
            metrics; None = none at all.
        lists: (L,) the lists whose number of positives ``P`` is overridden
            (``groups.n_positives`` not NULL); None = no override.
        n_positives: (L,) their ``P``, aligned with ``lists``.
        list_ids: (n,) the ``list_id`` of each row (the order of the lists, which the
            single-label metrics' ``input`` ties follow); None = the order of their first rows
            (``order``), as ingest numbers them.
    """

    group: np.ndarray
    scores: np.ndarray
    labels: np.ndarray
    order: np.ndarray | None = None
    lists: np.ndarray | None = None
    n_positives: np.ndarray | None = None
    items: np.ndarray | None = None
    gains: np.ndarray | None = None
    list_ids: np.ndarray | None = None


@dataclass(frozen=True)
class KeypointRun:
    """The keypoint matches and image pairs of one run (tables ``matches`` and ``pairs``).

    Attributes:
        pair: (n,) the pair id of each match.
        x0, y0, x1, y1: (n,) float64 the match ``(x0, y0)`` in image 0 -> ``(x1, y1)`` in image 1.
        gt_x1, gt_y1: (n,) float64 the ground-truth position of ``(x0, y0)`` in image 1.
        pairs: (P,) every pair id of the run, with or without matches.
        h: (P, 3, 3) true homographies (``h11..h33``, image 0 -> 1), all NaN where unknown.
        e: (P, 3, 3) estimated homographies (``e11..e33``, image 0 -> 1), all NaN where the
            estimation failed.
        r: (P, 3, 3) their inverses as stored (``r11..r33``, image 1 -> 0), all NaN likewise.
        width, height: (P,) image size in pixels (float64), NaN where unknown.
    """

    pair: np.ndarray
    x0: np.ndarray
    y0: np.ndarray
    x1: np.ndarray
    y1: np.ndarray
    gt_x1: np.ndarray
    gt_y1: np.ndarray
    pairs: np.ndarray
    h: np.ndarray
    e: np.ndarray
    r: np.ndarray
    width: np.ndarray
    height: np.ndarray


@dataclass(frozen=True)
class Outcomes:
    """The counted outcomes of one run (table ``outcomes``): one entry per group.

    Attributes:
        group: (G,) group ids.
        tp, fp, fn: (G,) integer counts of true positives, false positives, false negatives.
    """

    group: np.ndarray
    tp: np.ndarray
    fp: np.ndarray
    fn: np.ndarray


#: What a metric reads, by its ``source``.
Inputs = RankedLists | KeypointRun | Outcomes | DetectionRun | PoseRun
_SOURCE_TYPE: dict[str, type] = {
    "scores": RankedLists, "pairs": KeypointRun, "outcomes": Outcomes, "detections": DetectionRun,
    "cameras": PoseRun,
}  # fmt: skip


@dataclass(frozen=True)
class Params:
    """The parameters of a metric call; each metric reads those it takes and ignores the rest.

    Attributes:
        ties: the tie policy of ranking metrics (``grouped``, ``optimistic``, ``pessimistic``,
            ``input``).
        k: the cut-off of ``precision_at_k`` and ``recall_at_k``.
        at: the values of the metric's sweep (sigma, threshold, eps); None = its default.
        pose: the pose metrics' estimation setting and AUC code (a protocol's); None =
            SuperGlue's (:data:`~evalstore.metrics.pose_catalogue.DEFAULT_RULES`).
    """

    ties: str = "grouped"
    k: int | None = None
    at: Sequence[float] | None = None
    pose: PoseRules | None = None


@dataclass(frozen=True)
class Result:
    """A metric's values, one row per row of its SQL (columns ``group_id``, the sweep or curve
    column, the value column).

    Attributes:
        group: (n,) the group (list, pair) of each row; None for a value of the whole run.
        value: (n,) float64, NaN where the SQL gives NULL.
        at: (n,) the sweep value (sigma, threshold, eps) or a curve's x (recall) of each row;
            None for a metric with one value per group.
    """

    group: np.ndarray
    value: np.ndarray
    at: np.ndarray | None = None

    def sorted(self) -> Result:
        """The rows sorted by group (None first), then by ``at``; ties keep their order."""
        _, codes = _list_codes(self.group)
        order = np.lexsort((codes,) if self.at is None else (self.at, codes))
        at = None if self.at is None else self.at[order]
        return Result(self.group[order], self.value[order], at)


def _id_key(g: Any) -> tuple[bool, Any]:
    return (g is not None, g)


#: The uniform signature of every reference.
Reference = Callable[[Inputs, Params], Result]


def _expect(inputs: Inputs, source: str, name: str) -> Any:
    want = _SOURCE_TYPE[source]
    if not isinstance(inputs, want):
        raise InvalidInput(f"{name} reads {want.__name__}, got {type(inputs).__name__}")
    return inputs


def _list_codes(group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct ids (None first) and the integer code of each row."""
    arr = np.asarray(group)
    if arr.dtype != object:
        ids, codes = np.unique(arr, return_inverse=True)
        return ids, codes.astype(np.int64).reshape(-1)
    distinct = sorted(set(arr.tolist()), key=_id_key)
    index = {g: i for i, g in enumerate(distinct)}
    codes = np.array([index[g] for g in arr.tolist()], dtype=np.int64)
    out = np.empty(len(distinct), dtype=object)
    out[:] = distinct
    return out, codes


def _ranking_args(lists: RankedLists, ties: str) -> tuple[np.ndarray, dict[str, Any]]:
    """The list ids and the keyword arguments of :func:`~evalstore.core.ranking.per_list`."""
    ids, codes = _list_codes(lists.group)
    labels = np.asarray(lists.labels)
    n_positives = None
    if lists.lists is not None and lists.n_positives is not None and len(lists.lists):
        n_positives = np.bincount(codes[labels == 1], minlength=ids.size).astype(np.int64)
        where = {g: i for i, g in enumerate(ids.tolist())}
        overrides = zip(lists.lists.tolist(), lists.n_positives.tolist(), strict=True)
        for g, n in overrides:  # an override of a list without rows has no value, as in SQL
            if g in where:
                n_positives[where[g]] = int(n)
    order = lists.order
    if ties == "docid":
        if lists.items is None:
            raise InvalidInput("ties 'docid' needs the item ids (RankedLists.items)")
        order = docid_order(lists.items)
    kwargs = {"group": codes, "scores": lists.scores, "labels": labels, "order": order}
    return ids, {**kwargs, "n_positives": n_positives}


def per_list_reference(points: point_metrics.PointsMetric, *, takes_k: bool = False) -> Reference:
    """A ranking metric's reference: ``points`` over every list (``ranking.per_list``), with
    ``k`` if it ``takes_k``. Recall at 1 of q1, whose ``P`` is overridden to 2; q2 has none:

    >>> lists = RankedLists(np.array(["q1", "q1", "q2"]), np.array([0.9, 0.1, 0.5]),
    ...     np.array([1, -1, -1]), lists=np.array(["q1"]), n_positives=np.array([2]))
    >>> recall = per_list_reference(point_metrics.recall_at_k_of_points, takes_k=True)
    >>> recall(lists, Params(k=1)).value.tolist()  # 1 / 2; P = 0
    [0.5, nan]
    """
    name = points.__name__.removesuffix("_of_points")

    def reference(inputs: Inputs, params: Params) -> Result:
        ids, kwargs = _ranking_args(_expect(inputs, "scores", name), params.ties)
        k = params.k if takes_k else None
        _, values = ranking.per_list(points, ties=params.ties, k=k, **kwargs)
        return Result(ids, values)

    reference.__name__ = reference.__qualname__ = f"{name}_reference"
    reference.__doc__ = (
        f"``{name}`` of every list: :func:`evalstore.core.ranking.per_list` over "
        f":class:`RankedLists`.\n\n{getattr(ranking, name, points).__doc__}"
    )
    return reference


def graded_reference(name: str, *, takes_k: bool = False) -> Reference:
    """The reference of the graded metric ``name``: :func:`evalstore.core.graded.per_list_graded`.

    >>> lists = RankedLists(np.zeros(3), np.array([3.0, 2.0, 1.0]), np.array([-1, 1, 1]))
    >>> graded_reference("recip_rank")(lists, Params()).value.tolist()  # first positive at 2
    [0.5]
    """

    def reference(inputs: Inputs, params: Params) -> Result:
        lists = _expect(inputs, "scores", name)
        ids, kwargs = _ranking_args(lists, params.ties)
        k = params.k if takes_k else None
        _, values = graded.per_list_graded(name, ties=params.ties, k=k, gains=lists.gains, **kwargs)
        return Result(ids, values)

    reference.__name__ = reference.__qualname__ = f"{name}_reference"
    reference.__doc__ = (
        f"``{name}`` of every list: :func:`evalstore.core.graded.per_list_graded` over "
        ":class:`RankedLists` (its ``gains`` where stored)."
    )
    return reference


def pr_curve_reference(inputs: Inputs, params: Params) -> Result:
    """The (recall, precision) points of every list with positives, in ranking order.

    ``at`` is the recall, ``value`` the precision of each point
    (:func:`evalstore.core.ranking.ranking_points`); lists with ``P == 0`` have no rows, as
    in the SQL. Example, grouped ties (scores [2, 1, 1], labels [-1, +1, +1]):

    >>> lists = RankedLists(group=np.zeros(3, dtype=int), scores=np.array([2.0, 1.0, 1.0]),
    ...                     labels=np.array([-1, 1, 1]))
    >>> curve = pr_curve_reference(lists, Params())
    >>> curve.at.tolist(), curve.value.tolist()
    ([0.0, 1.0], [0.0, 0.6666666666666666])
    """
    ids, kwargs = _ranking_args(_expect(inputs, "scores", "pr_curve"), params.ties)
    pts = ranking.ranking_points(ties=params.ties, **kwargs)
    keep = pts.n_positives[pts.list_index] > 0
    return Result(ids[pts.list_index[keep]], pts.precision[keep], pts.recall[keep])


def _sweep(values: np.ndarray, ids: np.ndarray, at: np.ndarray) -> Result:
    """(P, S) values -> one row per (pair, sweep value)."""
    return Result(np.repeat(ids, at.size), values.reshape(-1), np.tile(at, ids.size))


def _at(params: Params, default: tuple[float, ...]) -> np.ndarray:
    return np.asarray(default if params.at is None else params.at, dtype=np.float64)


def fraction_reference(name: str, default: tuple[float, ...]) -> Reference:
    """The reference of ``name`` (``precision_at_sigma``, ``mma``) at each sweep value, by
    default ``default``: :mod:`evalstore.core.matching`'s. Two matches 5 and 9 px off:

    >>> z, nan = np.zeros(2), np.full((1, 3, 3), np.nan)
    >>> kp = KeypointRun(np.array(["p", "p"]), z, z, np.array([3.0, 9.0]), np.array([4.0, 0.0]),
    ...                  z, z, np.array(["p"]), nan, nan, nan, z[:1], z[:1])
    >>> fraction_reference("mma", (5.0, 9.0))(kp, Params()).value.tolist()  # d <= 5; d <= 9
    [0.5, 1.0]
    """
    core = getattr(matching, name)

    def reference(inputs: Inputs, params: Params) -> Result:
        kp: KeypointRun = _expect(inputs, "pairs", name)
        at = _at(params, default)
        ids, values = core(kp.pair, kp.x1, kp.y1, kp.gt_x1, kp.gt_y1, at, pairs=kp.pairs)
        return _sweep(values, ids, at)

    reference.__name__ = reference.__qualname__ = f"{name}_reference"
    reference.__doc__ = (
        f"``{name}`` of every pair at every sweep value: "
        f":func:`evalstore.core.matching.{name}` over :class:`KeypointRun`.\n\n{core.__doc__}"
    )
    return reference


def reprojection_error_reference(inputs: Inputs, params: Params) -> Result:
    """Mean reprojection error of every pair by its stored R (``r11..r33``):
    :func:`evalstore.core.matching.reprojection_error`; NaN where estimation failed or the
    pair has no match. With R = I, the matches' errors are 5 and 9 px:

    >>> z, eye = np.zeros(2), np.eye(3)[None]
    >>> kp = KeypointRun(np.array(["p", "p"]), z, z, np.array([3.0, 9.0]), np.array([4.0, 0.0]),
    ...                  z, z, np.array(["p"]), eye, eye, eye, z[:1] + 64, z[:1] + 48)
    >>> reprojection_error_reference(kp, Params()).value.tolist()  # (5 + 9) / 2
    [7.0]
    """
    kp: KeypointRun = _expect(inputs, "pairs", "reprojection_error")
    order = np.argsort(kp.pairs, kind="stable")  # R as an array is aligned with sorted ids
    ids, values = matching.reprojection_error(
        kp.pair, kp.x0, kp.y0, kp.x1, kp.y1, kp.r[order], pairs=kp.pairs[order]
    )
    return Result(ids, values)


def homography_accuracy_reference(inputs: Inputs, params: Params, corners: str = "image") -> Result:
    """1.0 / 0.0 per pair and eps: :func:`evalstore.core.matching.homography_accuracy` with
    the stored estimate ``e`` against the truth ``h``; NaN without a true homography or an
    image size, 0.0 where estimation failed.

    >>> z, eye, nan = np.zeros(0), np.eye(3)[None], np.full((1, 3, 3), np.nan)
    >>> scaled = np.diag([1.01, 1.01, 1.0])[None]
    >>> one = dict(pair=z, x0=z, y0=z, x1=z, y1=z, gt_x1=z, gt_y1=z, pairs=np.array(["p"]), h=eye,
    ...            r=nan, width=np.array([640.0]), height=np.array([480.0]))
    >>> homography_accuracy_reference(KeypointRun(e=scaled, **one), Params()).value.tolist()
    [0.0, 0.0, 1.0]
    >>> homography_accuracy_reference(KeypointRun(e=nan, **one), Params()).value.tolist()
    [0.0, 0.0, 0.0]
    """
    kp: KeypointRun = _expect(inputs, "pairs", "homography_accuracy")
    at = _at(params, EPS)
    values = np.full((kp.pairs.size, at.size), np.nan)
    sized = np.flatnonzero(~np.isnan(kp.width) & ~np.isnan(kp.height))
    if sized.size:
        values[sized] = matching.homography_accuracy(
            kp.h[sized], kp.e[sized], kp.width[sized], kp.height[sized], at, corners=corners
        )
    return _sweep(values, kp.pairs, at)


def homography_accuracy_superpoint_reference(inputs: Inputs, params: Params) -> Result:
    """:func:`homography_accuracy_reference` over SuperPoint's corners (x over 0..h-1, y over
    0..w-1, as its compute_homography indexes shape = (h, w)). A 3 x 2 image, e triples x:
    (0, 0), (0, 2), (1, 0), (1, 2) are 0, 0, 2, 2 px off, a mean of 1 (the image's corners: 2):

    >>> z, e = np.zeros(1), np.diag([3.0, 1.0, 1.0])[None]
    >>> kp = KeypointRun(z, z, z, z, z, z, z, np.array(["p"]), np.eye(3)[None], e, e, z + 3, z + 2)
    >>> homography_accuracy_superpoint_reference(kp, Params(at=(1.0,))).value.tolist()
    [1.0]
    """
    return homography_accuracy_reference(inputs, params, corners="superpoint")
