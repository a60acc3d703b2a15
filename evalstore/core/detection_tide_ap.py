"""TIDE's AP and its fixing of errors (NumPy reference, no I/O): the parts of dbolya/tide @
49a5d2a4aeb56795e93a3ed7cc7e6d25757bb4c1 that :mod:`evalstore.core.detection_tide` builds on.

- ``tidecv/ap.py``: ``APDataObject.get_ap`` (:func:`tide_ap`) and ``ClassedAPDataObject``
  (:class:`TideAPData`);
- ``tidecv/quantify.py`` ``TIDERun.fix_errors`` (:func:`fix_errors`) with ``error.fix()`` of
  ``tidecv/errors/main_errors.py`` and ``BestGTMatch`` of ``tidecv/errors/error.py``
  (:func:`best_match`, :func:`fixed_point`);
- pycocotools' ``maskUtils.iou`` for boxes (``common/maskApi.c`` ``bbIou``, :func:`tide_box_iou`).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from evalstore.errors import InvalidInput

__all__ = [
    "Point",
    "TideAPData",
    "TideError",
    "best_match",
    "fix_errors",
    "fixed_point",
    "tide_ap",
    "tide_box_iou",
]

FloatArray = npt.NDArray[np.float64]
Point = tuple[float, bool]  # (score, is a true positive)

# ap.py get_ap: x_range = np.array([x / resolution for x in range(resolution + 1)])
_X_RANGE = np.array([x / 100 for x in range(101)])


def tide_box_iou(dt: npt.ArrayLike, gt: npt.ArrayLike, crowd: bool = False) -> FloatArray:
    """pycocotools' box IoU ``[len(dt), len(gt)]`` of ``[x, y, w, h]`` boxes (``bbIou``, the same
    float operations in its order); ``crowd``: intersection over the detection's area.

    >>> tide_box_iou([[0, 0, 2, 2]], [[1, 0, 2, 2], [0, 0, 1, 1]]).tolist()
    [[0.3333333333333333, 0.25]]
    >>> tide_box_iou([[0, 0, 1, 1]], [[0, 0, 2, 2]], crowd=True).tolist()
    [[1.0]]
    """
    d = np.asarray(dt, dtype=np.float64).reshape(-1, 4)[:, None, :]
    g = np.asarray(gt, dtype=np.float64).reshape(-1, 4)[None, :, :]
    ga = g[..., 2] * g[..., 3]
    da = d[..., 2] * d[..., 3]
    w = np.minimum(d[..., 2] + d[..., 0], g[..., 2] + g[..., 0]) - np.maximum(d[..., 0], g[..., 0])
    h = np.minimum(d[..., 3] + d[..., 1], g[..., 3] + g[..., 1]) - np.maximum(d[..., 1], g[..., 1])
    i = w * h
    u = np.broadcast_to(da, i.shape) if crowd else da + ga - i
    out = np.zeros(i.shape, dtype=np.float64)
    np.divide(i, u, out=out, where=(w > 0) & (h > 0))
    return out


def tide_ap(points: Iterable[Point], num_gt: int) -> float:
    """``APDataObject.get_ap``: 101-point AP in percent of ``(score, is_true)`` points in push
    order (a stable sort by descending score), over ``num_gt`` positives (0 when none)::

        precision, recall at each point; precisions[i-1] = max(precisions[i-1], precisions[i])
        indices = np.searchsorted(recalls, x_range, side='left')   # x_range = [k / 100]
        y_range[k] = precisions[indices[k]] if indices[k] < len(precisions) else 0
        return sum(y_range) / len(y_range) * 100                   # Python's sum, in order

    Recall 1/2 at precision 1, then 1 at 2/3: 51 bars of 1 and 50 of 2/3, summed one by one:

    >>> tide_ap([(0.9, True), (0.8, False), (0.7, True)], 2)
    83.49834983498359
    >>> round((51 + 50 * 2 / 3) / 101 * 100, 10)
    83.498349835
    """
    if num_gt == 0:
        return 0.0
    pts = sorted(points, key=lambda p: -p[0])
    if not pts:
        return 0.0
    is_true = np.array([p[1] for p in pts], dtype=bool)
    tp = np.cumsum(is_true)
    fp = np.cumsum(~is_true)
    precisions = tp / (tp + fp)
    recalls = tp / num_gt
    precisions = np.maximum.accumulate(precisions[::-1])[::-1]
    indices = np.searchsorted(recalls, _X_RANGE, side="left")
    y_range: list[float] = [0] * len(_X_RANGE)  # tidecv's int zeros
    for bar, idx in enumerate(indices.tolist()):
        if idx < len(pts):
            y_range[bar] = float(precisions[idx])
    return float(sum(y_range) / len(y_range) * 100)


class TideAPData:
    """``ClassedAPDataObject`` of ``tidecv/ap.py``: per class, in the order the classes were
    first touched (``defaultdict``), its ``(score, is_true)`` points in push order and its number
    of ground-truth positives.

    >>> d = TideAPData()
    >>> d.add_gt(7, 2); d.push(7, (0.9, True)); d.push(3, (0.5, False))
    >>> d.ap(7), d.ap(3), d.mean_ap()  # a class with no positive counts as AP 0 in the mean
    (50.495049504950494, 0.0, 25.247524752475247)
    """

    def __init__(self) -> None:
        self.points: dict[Hashable, list[Point]] = {}
        self.num_gt: dict[Hashable, int] = {}

    def _touch(self, c: Hashable) -> None:
        if c not in self.points:
            self.points[c] = []
            self.num_gt[c] = 0

    def push(self, c: Hashable, point: Point) -> None:
        """``push(class_, id, score, is_true)`` (ids are unique, so a list keeps the order)."""
        self._touch(c)
        self.points[c].append(point)

    def add_gt(self, c: Hashable, n: int) -> None:
        """``add_gt_positives(class_, n)``."""
        self._touch(c)
        self.num_gt[c] += n

    def ap(self, c: Hashable) -> float:
        """``objs[c].get_ap()``."""
        return tide_ap(self.points[c], self.num_gt[c])

    def mean_ap(self) -> float:
        """``get_mAP``: the mean over the classes not ``is_empty()`` (a point or a positive)::

            aps = [x.get_ap() for x in self.objs.values() if not x.is_empty()]
            return sum(aps) / len(aps)

        Raises:
            InvalidInput: no such class (tidecv divides by zero).
        """
        aps = [self.ap(c) for c in self.points if self.points[c] or self.num_gt[c] != 0]
        if not aps:
            raise InvalidInput("TIDE: no ground truth and no detection in the evaluated images")
        return sum(aps) / len(aps)


@dataclass
class TideError:
    """One error of ``TIDERun.errors``: its ``kind`` (short name), the detection row (-1 for a
    Miss), ``original`` (``error.unfix()``: the class and false-positive point it was pushed as,
    None for an ignored detection or a Miss), and what ``error.fix()`` makes of it: the class
    ``fix_cls`` and, for Cls / Loc, the ground-truth row ``fix_gt`` whose ``BestGTMatch`` it is
    (-1: that ground truth was matched, so fixing drops the error). ``fixed`` is set by
    :func:`fixed_point` once every image is done.

    >>> TideError("Bkg", 4, (2, (0.3, False))).kind
    'Bkg'
    """

    kind: str
    pred: int
    original: tuple[Hashable, Point] | None
    fix_cls: Hashable = None
    fix_gt: int = -1
    fixed: tuple[Hashable, Point | int | None] = (None, None)


def best_match(
    error: TideError, score: float, used_gt: set[int], best: dict[int, tuple[float, int]]
) -> TideError:
    """``BestGTMatch(pred, gt)`` for a Cls or Loc ``error`` of a detection of ``score``: the
    ground truth ``error.fix_gt`` keeps the best-scoring such detection (strict ``<``, so the
    first of equal scores), from ``best_score = -1``::

        if not 'best_score' in self.gt: self.gt['best_score'] = -1
        if self.gt['best_score'] < score:
            self.gt['best_score'] = score; self.gt['best_id'] = self.pred['_id']

    A used ground truth gets no match (``fix_gt`` -1). ``best`` maps a ground-truth row to
    ``(best_score, best_id)``, ``best_id`` -2 while none is set.

    >>> best = {}
    >>> e1 = best_match(TideError("Loc", 0, None, 1, 5), 0.4, set(), best)
    >>> e2 = best_match(TideError("Cls", 1, None, 1, 5), 0.6, set(), best)
    >>> best, best_match(TideError("Loc", 2, None, 1, 6), 0.9, {6}, best).fix_gt
    ({5: (0.6, 1)}, -1)
    """
    g = error.fix_gt
    if g in used_gt:
        error.fix_gt = -1
        return error
    best_score = best[g][0] if g in best else -1
    if best_score < score:
        best[g] = (score, error.pred)
    elif g not in best:
        best[g] = (-1, -2)
    return error


def fixed_point(error: TideError, best: dict[int, tuple[float, int]]) -> None:
    """Sets ``error.fixed`` to ``nonepack(error.fix())``: a Cls / Loc error becomes a true
    positive (its score) of ``fix_cls`` if it is its ground truth's best match, else nothing; a
    Miss takes one positive of its class away (-1); the others are dropped.

    Raises:
        InvalidInput: the ground truth's candidates all score <= -1 (``best_id`` is never set:
            tidecv fails with a ``KeyError``).

    >>> e = TideError("Cls", 1, (2, (0.6, False)), fix_cls=1, fix_gt=5)
    >>> fixed_point(e, {5: (0.6, 1)}); e.fixed
    (1, (0.6, True))
    """
    if error.kind == "Miss":
        error.fixed = (error.fix_cls, -1)
    elif error.kind not in ("Cls", "Loc"):
        error.fixed = (None, None)
    elif error.fix_gt < 0:
        error.fixed = (error.fix_cls, None)
    else:
        best_score, best_id = best[error.fix_gt]
        if best_id == -2:
            raise InvalidInput(
                f"TIDE: every detection that could fix ground-truth row {error.fix_gt} scores"
                " <= -1 (tidecv fails there)"
            )
        error.fixed = (error.fix_cls, (best_score, True) if best_id == error.pred else None)


def fix_errors(
    errors: list[TideError],
    ap_data: TideAPData,
    *,
    kind: str | None = None,
    fp_transform: bool = False,
    false_neg: Mapping[Hashable, int] | None = None,
) -> TideAPData:
    """``TIDERun.fix_errors``: a new AP data object with the errors of ``kind`` fixed (none:
    ``kind`` None), pushed in tidecv's order: first every error (its fixed or its original
    point), then the true positives of each class, then each class's positives (less one per
    fixed Miss, less its unmatched ground truth ``false_neg`` for FalseNeg). ``fp_transform``:
    ``FalsePositiveError.fix`` on every point (true positives score 1, the others 0).

    >>> d = TideAPData(); d.add_gt(1, 2); d.push(1, (0.9, True))
    >>> miss = TideError("Miss", -1, None, 1, 0, fixed=(1, -1))
    >>> fix_errors([miss], d).ap(1), fix_errors([miss], d, kind="Miss").ap(1)
    (50.495049504950494, 100.0)
    """
    gt_pos = dict(ap_data.num_gt)
    new = TideAPData()
    for e in errors:
        c, point = e.original if e.original is not None else (None, None)
        if e.kind == kind:
            fix_cls, fix = e.fixed
            if isinstance(fix, int):  # a Miss: one positive less
                gt_pos[fix_cls] += fix
                continue
            c, point = fix_cls, fix
        if point is not None:
            new.push(c, _fp_fix(point) if fp_transform else point)
    for c in gt_pos:
        for point in ap_data.points[c]:
            if point[1]:
                new.push(c, _fp_fix(point) if fp_transform else point)
    for c, n in gt_pos.items():
        new.add_gt(c, n - (false_neg.get(c, 0) if false_neg is not None else 0))
    return new


def _fp_fix(point: Point) -> Point:
    """``FalsePositiveError.fix``: true positives score 1, false positives 0."""
    return (1, True) if point[1] else (0, False)
