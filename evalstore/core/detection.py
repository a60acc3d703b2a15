"""Detection from boxes: box IoU, box formats, COCO's parameters and the column inputs
(NumPy reference, no I/O).

The COCO protocol is pycocotools' ``COCOeval`` for ``iouType='bbox'``, transcribed from
cocodataset/cocoapi @ 8c9bcc3cf640524c4c20a9c40e89cb6a2f2fa0e9 (the PyPI package
pycocotools 2.0.11 differs from it only in ``np.float`` -> ``float``; the three files are the
same at e81c312b4e5e400c740c66c42eff5ecce6736f65, the commit ``metrics/protocols.py`` cites):

- ``common/maskApi.c`` ``bbIou``: the box IoU (:func:`box_iou`);
- ``PythonAPI/pycocotools/cocoeval.py`` ``Params.setDetParams``: the defaults
  (:class:`CocoParams`); ``_prepare``, ``computeIoU``, ``evaluateImg``, ``accumulate`` and
  ``summarize``: :mod:`evalstore.core.detection_coco`;
- ``PythonAPI/pycocotools/coco.py`` ``loadRes``: a detection's ``area`` is ``w * h`` of its box,
  its ``iscrowd`` 0, its ``id`` its position in the results from 1 (the caller passes ids).

Boxes are ``[x, y, w, h]`` float64 as COCO writes them; :func:`to_xywh` converts the other
usual formats. Inputs are plain columns (a mapping of name -> 1-D array), as
:func:`detection_columns` and :func:`truth_columns` read them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from evalstore.errors import InvalidInput

__all__ = [
    "BOX_FORMATS",
    "COCO_AREA_LABELS",
    "COCO_AREA_RANGES",
    "COCO_IOU_THRESHOLDS",
    "COCO_MAX_DETS",
    "COCO_RECALL_THRESHOLDS",
    "CocoParams",
    "Columns",
    "DetectionRun",
    "box_iou",
    "detection_columns",
    "paired_iou",
    "to_xywh",
    "truth_columns",
]

ArrayLike = npt.ArrayLike
FloatArray = npt.NDArray[np.float64]
Columns = Mapping[str, ArrayLike]

BOX_FORMATS = ("xyxy", "xywh", "cxcywh")

# Params.setDetParams, verbatim (indent dropped):
# self.iouThrs = np.linspace(.5, 0.95, int(np.round((0.95 - .5) / .05)) + 1, endpoint=True)
# self.recThrs = np.linspace(.0, 1.00, int(np.round((1.00 - .0) / .01)) + 1, endpoint=True)
# self.maxDets = [1, 10, 100]
# self.areaRng = [[0 ** 2, 1e5 ** 2], [0 ** 2, 32 ** 2], [32 ** 2, 96 ** 2], [96 ** 2, 1e5 ** 2]]
# self.areaRngLbl = ['all', 'small', 'medium', 'large']
#: the 10 IoU thresholds .50:.05:.95, from pycocotools' own ``np.linspace`` call
COCO_IOU_THRESHOLDS: tuple[float, ...] = tuple(
    np.linspace(0.5, 0.95, int(np.round((0.95 - 0.5) / 0.05)) + 1, endpoint=True).tolist()
)
#: the 101 recall thresholds 0:.01:1, from pycocotools' own ``np.linspace`` call
COCO_RECALL_THRESHOLDS: tuple[float, ...] = tuple(
    np.linspace(0.0, 1.00, int(np.round((1.00 - 0.0) / 0.01)) + 1, endpoint=True).tolist()
)
COCO_MAX_DETS = (1, 10, 100)
#: [lo, hi] of each area range, both ends inclusive (``area < lo or area > hi`` is outside)
COCO_AREA_RANGES: tuple[tuple[float, float], ...] = (
    (0**2, 1e5**2),
    (0**2, 32**2),
    (32**2, 96**2),
    (96**2, 1e5**2),
)
COCO_AREA_LABELS = ("all", "small", "medium", "large")


@dataclass(frozen=True)
class DetectionRun:
    """The stored rows of one detection run, as a metric's NumPy reference reads them.

    Attributes:
        images, categories: (I,), (C,) the run's image and category ids (text).
        detections: columns ``image_id``, ``category_id``, ``id`` (the input position + 1, as
            pycocotools' ``loadRes`` numbers them), ``x, y, w, h``, ``score``, in input order.
        ground_truth: columns ``image_id``, ``category_id``, ``id``, ``x, y, w, h``, ``area``,
            ``iscrowd``, in input order.
    """

    images: np.ndarray
    categories: np.ndarray
    detections: Mapping[str, np.ndarray]
    ground_truth: Mapping[str, np.ndarray]


@dataclass(frozen=True)
class CocoParams:
    """pycocotools' ``Params(iouType='bbox')``: its defaults, in its order.

    ``img_ids`` and ``cat_ids`` are ``p.imgIds`` and ``p.catIds`` (``COCOeval`` takes every
    image and category of the annotation file; ``evaluate`` sorts them and drops repeats).
    ``None`` takes those of the ground truth and the detections together, which gives the same
    numbers: an image with neither is skipped by ``evaluateImg``, a category with neither is
    skipped by ``accumulate`` (its cells stay -1). ``max_dets`` is sorted as ``evaluate`` does.

    >>> p = CocoParams()
    >>> p.iou_thrs[0], p.iou_thrs[5], p.iou_thrs[-1], len(p.rec_thrs), p.max_dets
    (0.5, 0.75, 0.95, 101, (1, 10, 100))
    >>> p.area_rng[2], p.area_lbl[2]
    ((1024, 9216), 'medium')
    """

    img_ids: tuple[object, ...] | None = None
    cat_ids: tuple[object, ...] | None = None
    iou_thrs: tuple[float, ...] = COCO_IOU_THRESHOLDS
    rec_thrs: tuple[float, ...] = COCO_RECALL_THRESHOLDS
    max_dets: tuple[int, ...] = COCO_MAX_DETS
    area_rng: tuple[tuple[float, float], ...] = COCO_AREA_RANGES
    area_lbl: tuple[str, ...] = COCO_AREA_LABELS

    def __post_init__(self) -> None:
        if len(self.area_rng) != len(self.area_lbl):
            raise InvalidInput(
                f"CocoParams: {len(self.area_rng)} area ranges but {len(self.area_lbl)} labels"
            )
        if not self.iou_thrs or not self.rec_thrs or not self.max_dets or not self.area_rng:
            raise InvalidInput("CocoParams: iou_thrs, rec_thrs, max_dets and area_rng are needed")
        if any(int(m) < 1 for m in self.max_dets):
            raise InvalidInput(f"CocoParams: max_dets {self.max_dets}: each must be >= 1")
        object.__setattr__(self, "max_dets", tuple(sorted(int(m) for m in self.max_dets)))


def box_iou(dt: ArrayLike, gt: ArrayLike, iscrowd: ArrayLike) -> FloatArray:
    """The IoU of every detection (row) with every ground truth (column), boxes ``[x, y, w,
    h]``; against a crowd region, the intersection over the detection's area. The float
    operations of ``bbIou`` (``common/maskApi.c``), in its order::

        ga=G[2]*G[3]; crowd=iscrowd!=NULL && iscrowd[g];
        da=D[2]*D[3]; o[g*m+d]=0;
        w=fmin(D[2]+D[0],G[2]+G[0])-fmax(D[0],G[0]); if(w<=0) continue;
        h=fmin(D[3]+D[1],G[3]+G[1])-fmax(D[1],G[1]); if(h<=0) continue;
        i=w*h; u = crowd ? da : da+ga-i; o[g*m+d]=i/u;

    (``maskUtils.iou`` returns it as ``[m, n]``.) Boxes that only touch overlap 0.

    A box inside another of four times its area, then the same pair with the big one a crowd
    region (the detection lies wholly inside it):

    >>> box_iou([[0, 0, 1, 1]], [[0, 0, 2, 2], [0, 0, 2, 2]], [0, 1]).tolist()
    [[0.25, 1.0]]
    """
    d = _boxes(dt, "dt")
    g = _boxes(gt, "gt")
    crowd = np.asarray(iscrowd).astype(bool).reshape(-1)
    if crowd.shape[0] != g.shape[0]:
        raise InvalidInput(f"iscrowd: {crowd.shape[0]} flags for {g.shape[0]} gt boxes")
    return paired_iou(d[:, None, :], g[None, :, :], crowd[None, :])


def paired_iou(D: FloatArray, G: FloatArray, crowd: npt.NDArray[np.bool_]) -> FloatArray:
    """``bbIou`` of boxes ``D[..., 4]`` and ``G[..., 4]`` taken together element by element
    (NumPy broadcasting), ``crowd`` the flag of each ``G``: :func:`box_iou` for every pair,
    :func:`evalstore.core.detection_match.box_pairs` for the pairs of one image and category.

    >>> paired_iou(np.array([[0., 0, 1, 1]]), np.array([[0., 0, 2, 2]]), np.array([True])).tolist()
    [1.0]
    """
    ga = G[..., 2] * G[..., 3]
    da = D[..., 2] * D[..., 3]
    w = np.minimum(D[..., 2] + D[..., 0], G[..., 2] + G[..., 0]) - np.maximum(D[..., 0], G[..., 0])
    h = np.minimum(D[..., 3] + D[..., 1], G[..., 3] + G[..., 1]) - np.maximum(D[..., 1], G[..., 1])
    overlap = (w > 0) & (h > 0)
    i = w * h
    u = np.where(crowd, da, da + ga - i)
    out = np.zeros(i.shape, dtype=np.float64)
    np.divide(i, u, out=out, where=overlap)
    return out


def to_xywh(boxes: ArrayLike, box_format: str) -> FloatArray:
    """Boxes ``[n, 4]`` in ``box_format`` (``xyxy``: corners ``x1, y1, x2, y2``; ``xywh``: COCO's
    top-left corner and size; ``cxcywh``: centre and size) as COCO's ``[x, y, w, h]``, float64
    (``w = x2 - x1``, ``x = cx - w / 2``).

    Raises:
        InvalidInput: an unknown format, not ``[n, 4]`` numbers, NaN or infinite values, or a
            negative width or height.

    >>> to_xywh([[10, 20, 40, 60]], "xyxy").tolist()
    [[10.0, 20.0, 30.0, 40.0]]
    >>> to_xywh([[25, 40, 30, 40]], "cxcywh").tolist()
    [[10.0, 20.0, 30.0, 40.0]]
    """
    if box_format not in BOX_FORMATS:
        raise InvalidInput(f"box_format {box_format!r}: expected one of {', '.join(BOX_FORMATS)}")
    b = _floats(boxes, "boxes")
    if b.ndim != 2 or b.shape[1] != 4:
        if b.size == 0:
            return np.zeros((0, 4))
        raise InvalidInput(f"boxes must have shape [n, 4], got {b.shape}")
    if box_format == "xyxy":
        out = np.stack([b[:, 0], b[:, 1], b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]], axis=1)
    elif box_format == "cxcywh":
        out = np.stack([b[:, 0] - b[:, 2] / 2, b[:, 1] - b[:, 3] / 2, b[:, 2], b[:, 3]], axis=1)
    else:
        out = b.copy()
    return _check_sides(out, "boxes")


def detection_columns(detections: Columns) -> dict[str, np.ndarray]:
    """The detections' columns, checked: ``image_id``, ``category_id``, ``id`` (any ids),
    ``x, y, w, h`` (float64, finite, ``w, h >= 0``) and ``score`` (float64, finite), with
    ``area = w * h`` as ``loadRes`` computes it.

    >>> c = detection_columns({"image_id": [1], "category_id": [3], "id": [1],
    ...                        "x": [0], "y": [0], "w": [2], "h": [3], "score": [0.5]})
    >>> c["area"].tolist(), c["score"].dtype.name
    ([6.0], 'float64')
    """
    cols = _read(detections, "detections", ("image_id", "category_id", "id"), ("score",))
    cols["area"] = cols["w"] * cols["h"]
    return cols


def truth_columns(ground_truth: Columns) -> dict[str, np.ndarray]:
    """The ground truth's columns, checked: ``image_id``, ``category_id``, ``id`` (unique),
    ``x, y, w, h``, ``area`` (the annotation's own ``area``, not the box's; ``w * h`` when the
    column is absent) and ``iscrowd`` (0/1, 0 when absent). An ``ignore`` column is read and
    dropped: ``_prepare`` overwrites it (``gt['ignore'] = 'iscrowd' in gt and gt['iscrowd']``).

    >>> c = truth_columns({"image_id": [1, 1], "category_id": [3, 3], "id": [7, 8],
    ...                    "x": [0, 0], "y": [0, 0], "w": [2, 2], "h": [3, 3],
    ...                    "area": [5.5, 6], "ignore": [1, 0]})
    >>> c["area"].tolist(), c["iscrowd"].tolist(), "ignore" in c
    ([5.5, 6.0], [0, 0], False)
    """
    names = ("image_id", "category_id", "id")
    cols = _read(ground_truth, "ground_truth", names, ())
    n = cols["x"].shape[0]
    area = ground_truth.get("area")
    cols["area"] = cols["w"] * cols["h"] if area is None else _finite(area, "ground_truth", "area")
    crowd = ground_truth.get("iscrowd")
    flags = np.zeros(n, dtype=np.int64) if crowd is None else np.asarray(crowd).reshape(-1)
    if flags.shape[0] != n or not np.isin(flags, (0, 1)).all():
        raise InvalidInput(f"ground_truth: iscrowd must be {n} flags 0 or 1")
    cols["iscrowd"] = flags.astype(np.int64)
    if "ignore" in ground_truth:
        _finite(ground_truth["ignore"], "ground_truth", "ignore")
    ids, counts = np.unique(cols["id"], return_counts=True)
    if (counts > 1).any():
        raise InvalidInput(f"ground_truth: id {ids[counts > 1][0]!r} is repeated")
    if cols["area"].shape[0] != n:
        raise InvalidInput(f"ground_truth: area must have {n} values")
    return cols


# ----------------------------------------------------------------------------- helpers


def _floats(values: ArrayLike, what: str) -> FloatArray:
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{what} must be numbers: {exc}") from None


def _check_sides(b: FloatArray, what: str) -> FloatArray:
    if not np.isfinite(b).all():
        raise InvalidInput(
            f"{what}: row {int(np.flatnonzero(~np.isfinite(b).all(1))[0])} is not finite"
        )
    bad = (b[:, 2] < 0) | (b[:, 3] < 0)
    if bad.any():
        raise InvalidInput(f"{what}: row {int(np.flatnonzero(bad)[0])} has a negative side")
    return b


def _boxes(values: ArrayLike, what: str) -> FloatArray:
    b = _floats(values, what)
    if b.size == 0:
        return np.zeros((0, 4))
    if b.ndim != 2 or b.shape[1] != 4:
        raise InvalidInput(f"{what} boxes must have shape [n, 4], got {b.shape}")
    return b


def _finite(values: ArrayLike, what: str, name: str) -> FloatArray:
    v = _floats(values, f"{what}: {name}").reshape(-1)
    if not np.isfinite(v).all():
        raise InvalidInput(
            f"{what}: {name} at row {int(np.flatnonzero(~np.isfinite(v))[0])} is not finite"
        )
    return v


def _read(
    columns: Columns, what: str, ids: tuple[str, ...], numbers: tuple[str, ...]
) -> dict[str, np.ndarray]:
    missing = [c for c in (*ids, "x", "y", "w", "h", *numbers) if c not in columns]
    if missing:
        raise InvalidInput(f"{what}: missing column(s) {', '.join(missing)}")
    cols: dict[str, np.ndarray] = {c: np.asarray(columns[c]).reshape(-1) for c in ids}
    for c in ("x", "y", "w", "h", *numbers):
        cols[c] = _finite(columns[c], what, c)
    lengths = {c: v.shape[0] for c, v in cols.items()}
    if len(set(lengths.values())) > 1:
        raise InvalidInput(f"{what}: columns of different lengths {lengths}")
    _check_sides(np.stack([cols[c] for c in ("x", "y", "w", "h")], axis=1), what)
    return cols
