"""The NumPy references of the detection metrics (source ``detections``): COCO's 12 numbers
of each category, from the stored boxes through the transcription of pycocotools
(:func:`~evalstore.core.detection_coco.coco_lists`, ``coco_accumulate``,
``coco_summarize_by_category``). The SQL reads the matches that
:mod:`evalstore.analysis.det_matching` made with the vectorised matcher; this twin matches
again with the plain loop of ``evaluateImg``.
"""

from __future__ import annotations

from collections.abc import Mapping

import duckdb
import numpy as np

from evalstore.core.detection import CocoParams, DetectionRun
from evalstore.core.detection_coco import coco_lists
from evalstore.core.detection_summary import coco_accumulate, coco_summarize_by_category
from evalstore.core.detection_tide import TideResult, tide_errors
from evalstore.core.detection_voc import voc_ap_of_lists, voc_lists
from evalstore.db import queries
from evalstore.errors import InvalidInput
from evalstore.metrics.catalogue import COCO_METRICS, TIDE_METRICS, VOC_METRICS
from evalstore.metrics.references import Inputs, Params, Reference, Result

__all__ = [
    "COCO_METRICS", "TIDE_METRICS", "VOC_METRICS", "coco_reference", "pycocotools_ids",
    "stored_run", "tide_inputs", "tide_reference", "voc_columns", "voc_reference",
]  # fmt: skip


def stored_run(con: duckdb.DuckDBPyConnection, run_id: int) -> DetectionRun:
    """A stored detection run's rows as the references read them: detections in input order
    with pycocotools' ids (input position + 1), ground truth in input order."""
    bind = {"run_id": run_id}
    images = queries.fetch(con, "store/det_run_images", bind)["image_id"].to_numpy()
    cats = queries.fetch(con, "store/det_run_categories", bind)["category_id"].to_numpy()
    dets = queries.fetch(con, "store/det_run_boxes", bind)
    gts = queries.fetch(con, "store/det_run_truth", bind)
    dt = {c: dets[c].to_numpy() for c in dets.columns}
    dt["id"] = dt["det_id"] + 1
    gt = {c: gts[c].to_numpy() for c in gts.columns}
    gt["id"] = gt["gt_id"]
    gt["iscrowd"] = gt["iscrowd"].astype(np.int64)
    gt["difficult"] = gts["difficult"].fill_null(False).to_numpy()
    return DetectionRun(images, cats, dt, gt)


def pycocotools_ids(ids: np.ndarray) -> np.ndarray:
    """Ids as pycocotools would hold them: integers when every id is an integer's decimal
    text (COCO's are; ``np.unique`` then sorts them numerically), else the text."""
    text = np.asarray(ids, dtype=str)
    try:
        numbers = np.array([int(v) for v in text.tolist()], dtype=np.int64)
    except ValueError:
        return text
    if np.unique(numbers).size != np.unique(text).size:
        return text
    return numbers


def coco_reference(name: str) -> Reference:
    """The reference of ``coco_<stat>``: the number ``COCO_METRICS[name][0]`` of each category
    (NaN for pycocotools' -1), the group being the category id."""
    stat = COCO_METRICS[name][0]

    def reference(inputs: Inputs, params: Params) -> Result:
        if not isinstance(inputs, DetectionRun):
            raise InvalidInput(f"{name} reads DetectionRun, got {type(inputs).__name__}")
        cats = np.asarray(inputs.categories, dtype=str)
        dt = dict(inputs.detections)
        gt = dict(inputs.ground_truth)
        for cols in (dt, gt):
            cols["image_id"] = pycocotools_ids(np.asarray(cols["image_id"], dtype=str))
            cols["category_id"] = np.asarray(cols["category_id"], dtype=str)
        gt["id"] = np.asarray(gt["id"], dtype=str)  # text ids: never read as 0
        p = CocoParams(
            img_ids=tuple(pycocotools_ids(np.asarray(inputs.images, dtype=str)).tolist()),
            cat_ids=tuple(cats.tolist()),
        )
        lists = coco_lists(dt, gt, p)
        by_cat = coco_summarize_by_category(*coco_accumulate(lists), lists.params)
        values = [by_cat[c][stat] for c in lists.params.cat_ids or ()]
        group = np.array(list(lists.params.cat_ids or ()), dtype=object)
        value = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
        return Result(group, value)

    reference.__name__ = f"{name}_reference"
    reference.__doc__ = f"COCO's {stat} of each category (pycocotools, bbox)."
    return reference


def voc_columns(cols: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The columns :func:`~evalstore.core.detection_voc.voc_lists` reads from a stored run's:
    ``x1, y1, x2, y2`` as written where given (finite), else ``x, y, x + w, y + h``; ``class``
    the category; ``difficult`` False where not given."""
    out = dict(cols)
    for corner, base, side in (
        ("x1", "x", ""),
        ("y1", "y", ""),
        ("x2", "x", "w"),
        ("y2", "y", "h"),
    ):
        made = np.asarray(cols[base], dtype=np.float64)
        if side:
            made = made + np.asarray(cols[side], dtype=np.float64)
        given = np.asarray(cols.get(corner, np.full(made.size, np.nan)), dtype=np.float64)
        out[corner] = np.where(np.isfinite(given), given, made)
    out["class"] = np.asarray(cols["category_id"], dtype=str)
    out["image_id"] = np.asarray(cols["image_id"], dtype=str)
    out["difficult"] = np.asarray(cols.get("difficult", np.zeros(made.size)), dtype=bool)
    return out


def voc_reference(name: str) -> Reference:
    """The reference of ``ap_voc*_det``: each class's AP as its VOC code computes it
    (:func:`~evalstore.core.detection_voc.voc_lists` with equal scores in input order, then
    ``voc_ap_of_lists``); NaN for a class without objects to find."""
    reference_code, formula, title = VOC_METRICS[name]

    def reference(inputs: Inputs, params: Params) -> Result:
        if not isinstance(inputs, DetectionRun):
            raise InvalidInput(f"{name} reads DetectionRun, got {type(inputs).__name__}")
        gt = voc_columns(inputs.ground_truth)
        lists = voc_lists(
            voc_columns(inputs.detections), gt, reference=reference_code, ties="stable",
            images=np.asarray(inputs.images, dtype=str),
        )  # fmt: skip
        # voc_eval's precision as fixed in d66cc2bf (max(tp + fp, eps)): before it, a class
        # whose best detection finds a difficult object has AP NaN
        ap = voc_ap_of_lists(lists, formula=formula, eps_precision=reference_code == "voc_eval")
        found = {c: (v if n > 0 else np.nan) for c, v, n in
                 zip(lists.classes.astype(str).tolist(), ap.tolist(), lists.n_positives.tolist(),
                     strict=True)}  # fmt: skip
        cats = np.asarray(inputs.categories, dtype=str)
        value = np.array([found.get(c, np.nan) for c in cats.tolist()], dtype=np.float64)
        return Result(cats.astype(object), value)

    reference.__name__ = f"{name}_reference"
    reference.__doc__ = f"PASCAL VOC detection AP of each class ({title})."
    return reference


def tide_inputs(run: DetectionRun) -> TideResult:
    """tidecv's ``TIDE().evaluate(gt, preds, mode=TIDE.BOX)`` of a stored run (its defaults:
    pos 0.5, background 0.1, 100 detections per image), images in pycocotools' id order."""
    images = pycocotools_ids(np.asarray(run.images, dtype=str))
    dt, gt = dict(run.detections), dict(run.ground_truth)
    for cols in (dt, gt):
        cols["image_id"] = pycocotools_ids(np.asarray(cols["image_id"], dtype=str))
        cols["category_id"] = np.asarray(cols["category_id"], dtype=str)
    return tide_errors(dt, gt, images=np.sort(images).tolist())


def tide_reference(name: str) -> Reference:
    """The reference of ``tide_*``, percent: the run's value (group None) and each category's
    (its class's AP, or the AP of that class with the errors fixed minus it; NaN for a category
    tidecv never saw). The run's value is not their mean (registry: ``overall = "run row"``)."""
    error, title = TIDE_METRICS[name]

    def reference(inputs: Inputs, params: Params) -> Result:
        if not isinstance(inputs, DetectionRun):
            raise InvalidInput(f"{name} reads DetectionRun, got {type(inputs).__name__}")
        r = tide_inputs(inputs)
        value = r.ap if error == "AP" else {**r.main, **r.special}[error]
        cats = np.asarray(inputs.categories, dtype=str).tolist()
        per = {str(c): v.ap if error == "AP" else {**v.main, **v.special}[error]
               for c, v in r.per_category.items()}  # fmt: skip
        values = [value, *(per.get(c, np.nan) for c in cats)]
        return Result(np.array([None, *cats], dtype=object), np.array(values, dtype=np.float64))

    reference.__name__ = f"{name}_reference"
    reference.__doc__ = f"TIDE: {title} (tidecv 1.0.1), percent."
    return reference
