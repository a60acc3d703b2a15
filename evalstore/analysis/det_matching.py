"""The matches of detection runs, made when a protocol first needs them.

A detection run stores its boxes raw (``det_images``, ``det_categories``, ``det_truth``,
``det_boxes``). The first evaluation under COCO's protocol matches them as pycocotools'
``COCOeval.evaluateImg`` does (:func:`evalstore.core.detection_match.coco_match`, checked
against pycocotools itself), inside that evaluation's write transaction, and stores the
outcome (``det_matches``, ``det_positives``, ``det_matched``): one ranked list per (category,
IoU threshold, area range) whose labels the metric SQL (``sql/metrics/coco_*.sql``) reads, as
the keypoint runs' homographies are estimated on first use (:mod:`evalstore.analysis.estimates`).
VOC's matchings (``voc_eval``, ``vocevaldet``) are made in SQL alone (``store/store_voc_matches``,
whose NumPy twin is :func:`evalstore.core.detection_voc.voc_lists`): nothing of the run is read
into Python.

The order pycocotools ranks a category's detections in is kept in ``seq``: descending score,
equal scores in the order of ``accumulate``'s concatenation (images in ``np.unique`` order of
their ids, numerically when every id is an integer, then the rank in the image).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa

from evalstore.analysis import estimates
from evalstore.analysis.pose_estimates import PoseSetting, ensure_pose_estimates
from evalstore.core.detection import CocoParams
from evalstore.core.detection_match import coco_match, group_ranks
from evalstore.db import queries
from evalstore.errors import InvalidInput
from evalstore.metrics import protocols
from evalstore.metrics.det_references import (
    COCO_METRICS,
    TIDE_METRICS,
    VOC_METRICS,
    stored_run,
    tide_inputs,
)
from evalstore.metrics.pose_catalogue import ESTIMATED

if TYPE_CHECKING:
    from evalstore.db.connection import Database
    from evalstore.metrics.protocols import Protocol
    from evalstore.metrics.registry import Metric

__all__ = [
    "COCO_AREAS", "MATCHINGS", "NEEDS_MATCHES", "ensure_derived", "ensure_matches", "id_order",
]  # fmt: skip

#: the label columns of det_matches, one per COCO area range
COCO_AREAS = {
    "all": "label", "small": "label_small", "medium": "label_medium", "large": "label_large"
}  # fmt: skip
#: every matching a detection metric reads
MATCHINGS = ("coco", "voc_eval", "vocevaldet", "tide")
#: the metrics whose SQL reads a matching's rows, and which matching
NEEDS_MATCHES: dict[str, str] = {
    **dict.fromkeys(COCO_METRICS, "coco"),
    **{name: reference for name, (reference, _, _) in VOC_METRICS.items()},
    **dict.fromkeys(TIDE_METRICS, "tide"),
}


def ensure_derived(
    store: Database, metric: Metric, run_ids: Sequence[int], *, protocol: Protocol | None = None
) -> None:
    """Make what ``metric``'s SQL reads and is made on first use, inside a transaction of
    ``store``: the homographies of keypoint runs, their relative poses at the protocol's
    settings (SuperGlue's without one), the matches of detection runs (every protocol's for
    a user's metric of detections, whose SQL may read any of them)."""
    if metric.name in estimates.NEEDS_ESTIMATES:
        estimates.ensure_estimates(store, run_ids, needed_by=metric.name)
    if metric.name in ESTIMATED:
        rules = protocols.pose_rules(protocol)
        settings = [PoseSetting(rules.method, t, rules.confidence) for t in rules.ransac_thresholds]
        ensure_pose_estimates(store, run_ids, settings, needed_by=metric.name)
    if metric.path is not None and metric.source == "detections":
        for matching in MATCHINGS:
            ensure_matches(store, run_ids, needed_by=metric.name, matching=matching)
    elif metric.name in NEEDS_MATCHES:
        ensure_matches(store, run_ids, needed_by=metric.name, matching=NEEDS_MATCHES[metric.name])


def ensure_matches(
    store: Database, run_ids: Sequence[int], *, needed_by: str, matching: str = "coco"
) -> int:
    """Make and store the matches (``coco``, ``voc_eval`` or ``vocevaldet``) of the detection
    runs among ``run_ids`` that have none yet; call it inside a transaction of ``store``.
    Returns how many runs were matched.

    Raises:
        InvalidInput: a read-only store with runs to match (it cannot store them).
    """
    bind = {"runs": list(run_ids), "matching": matching}
    pending = queries.fetch_rows(store.con, "store/pending_det_runs", bind)
    if pending and store.read_only:
        raise InvalidInput(
            f"run {pending[0][1]}/{pending[0][2]}: {needed_by} needs the matches of its "
            "detections, which are made on first use and stored; evaluate it once on a "
            "writable store (not read-only)"
        )
    for run_id, _, _ in pending:
        if matching == "coco":
            _match_coco(store, int(run_id))
        elif matching == "tide":
            _tide(store, int(run_id))
        else:
            _match_voc(store, int(run_id), matching)
    return len(pending)


def id_order(ids: np.ndarray) -> np.ndarray:
    """The position of each id in pycocotools' order of its ids (``np.unique``): numeric when
    every id is an integer's decimal text (as COCO's are), else by text."""
    series = pl.Series(ids, dtype=pl.String)
    numbers = series.cast(pl.Int64, strict=False)
    if numbers.null_count() == 0 and numbers.n_unique() == series.len():
        keys: np.ndarray = numbers.to_numpy()
    else:
        keys = series.to_numpy().astype(str)
    order = np.argsort(keys, kind="stable")
    position = np.empty(order.size, dtype=np.int64)
    position[order] = np.arange(order.size)
    return position


def _codes(values: np.ndarray, known: np.ndarray) -> np.ndarray:
    """Each value's index in ``known`` (every value is one of them: the store checked)."""
    index = pl.DataFrame({"v": known, "i": np.arange(known.size)})
    out = pl.DataFrame({"v": values}).join(index, on="v", how="left", maintain_order="left")
    return out["i"].to_numpy()


def _arrow(values: np.ndarray, dtype: type[pl.DataType] | None = None) -> pa.Array:
    """``values`` as an Arrow array, through polars: pyarrow's ``pa.array`` imports pandas
    on its first call (0.2 CPU s of an ``eval`` process)."""
    return pl.Series(values, dtype=dtype).to_arrow()


def _pairs(
    con: duckdb.DuckDBPyConnection, run_id: int, kept: np.ndarray, det_id: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The overlapping (kept detection, box) pairs of each image and category and their IoU,
    joined in SQL (store/det_run_pairs; :func:`~evalstore.core.detection_match.box_pairs` is
    its NumPy twin): indices into the kept detections (``kept``, indices into ``det_id``) and
    into the boxes in input order."""
    pairs = queries.fetch(con, "store/det_run_pairs", {"run_id": run_id})
    position = np.full(det_id.size, -1, dtype=np.int64)  # det_id -> index among the kept
    position[det_id[kept]] = np.arange(kept.size)
    d = position[pairs["det_id"].to_numpy()]
    on = d >= 0
    return d[on], pairs["gt_seq"].to_numpy()[on], pairs["iou"].to_numpy()[on]


def _positives(cats: np.ndarray, area: str, n: np.ndarray) -> pl.DataFrame:
    """det_positives' rows of one area range: each category's ground truth to find."""
    return pl.DataFrame(
        {"category_id": cats, "area": area, "n_positives": n},
        schema={"category_id": pl.String, "area": pl.String, "n_positives": pl.Int64},
    )


def _match_coco(store: Database, run_id: int) -> None:
    con = store.con
    p = CocoParams()
    run = stored_run(con, run_id)
    images, cats, dt, gt = run.images, run.categories, run.detections, run.ground_truth
    image_pos = id_order(images)  # images[i] is at image_pos[i] in pycocotools' order
    n_cat = max(cats.size, 1)
    d_img = image_pos[_codes(dt["image_id"], images)]
    d_cat = _codes(dt["category_id"], cats)
    g_cat = _codes(gt["category_id"], cats)
    d_group = d_img * n_cat + d_cat
    score, det_id = dt["score"], dt["det_id"]
    rank = group_ranks(d_group, score, det_id)  # in its (image, category); keep maxDets
    kept = np.flatnonzero(rank < p.max_dets[-1])
    g_crowd = gt["iscrowd"].astype(bool)
    areas = np.array(p.area_rng, dtype=np.float64)
    thresholds = np.array(p.iou_thrs, dtype=np.float64)
    matched = coco_match(
        det_rank=rank[kept],
        det_area=dt["area"][kept],
        gt_area=gt["area"],
        gt_crowd=g_crowd,
        pairs=_pairs(con, run_id, kept, det_id),
        iou_thresholds=thresholds,
        area_ranges=areas,
    )
    # seq: the place in the category's ranking (-score, image order, rank)
    k_cat, k_score, k_rank = d_cat[kept], score[kept], rank[kept]
    by_cat = np.lexsort((k_rank, d_img[kept], -k_score, k_cat))
    cat_sorted = k_cat[by_cat]
    first = np.flatnonzero(np.r_[True, cat_sorted[1:] != cat_sorted[:-1]])
    seq = np.empty(kept.size, dtype=np.int64)
    seq[by_cat] = np.arange(kept.size) - np.repeat(first, np.diff(np.r_[first, kept.size]))
    n_t = thresholds.size
    columns: dict[str, pa.Array] = {
        "category_id": pa.DictionaryArray.from_arrays(
            _arrow(np.tile(k_cat.astype(np.int32), n_t)), _arrow(cats, pl.String)
        ),
        "iou_index": _arrow(np.repeat(np.arange(n_t, dtype=np.int16), kept.size)),
        "det_id": _arrow(np.tile(det_id[kept], n_t)),
        "seq": _arrow(np.tile(seq, n_t)),
        "rank": _arrow(np.tile(k_rank.astype(np.int32), n_t)),
        "score": _arrow(np.tile(k_score, n_t)),
    }
    for a, label in enumerate(COCO_AREAS.values()):
        columns[label] = _arrow(matched.label[a].reshape(-1))
    box = matched.gt[0].reshape(-1)  # the box matched under the area range all, or -1
    seqs = gt["seq"] if gt["seq"].size else np.zeros(1, dtype=np.int64)
    columns["gt_seq"] = pa.array(seqs[np.maximum(box, 0)], mask=box < 0)
    positives = []
    for a, name in enumerate(COCO_AREAS):
        counted = ~matched.gt_ignored[a]
        n = np.bincount(g_cat[counted], minlength=cats.size) if cats.size else np.zeros(0)
        positives.append(_positives(cats, name, n.astype(np.int64)))
    _store(store, run_id, "coco", pa.table(columns), pl.concat(positives), thresholds.tolist())


def _store(
    store: Database,
    run_id: int,
    matching: str,
    matches: pa.Table,
    positives: pl.DataFrame,
    thresholds: list[float],
) -> None:
    con = store.con
    con.register("_det_matches", matches)
    con.register("_det_positives", positives.to_arrow())
    try:
        keys = {"run_id": run_id, "matching": matching, "thresholds": thresholds}
        names = ("store_det_matches", "store_det_positives", "store_det_thresholds")
        for name in (*names, "mark_det_matched"):
            queries.run(con, f"store/{name}", keys)
    finally:
        for table in ("_det_matches", "_det_positives"):
            # in a transaction that an error or a Ctrl-C aborted this fails too, and would
            # stand in for what stopped it
            with contextlib.suppress(duckdb.Error):
                con.unregister(table)


def _match_voc(store: Database, run_id: int, reference: str) -> None:
    """The matching ``reference`` (voc_eval or vocevaldet) of the run, made and stored in SQL
    (store/store_voc_matches: :func:`~evalstore.core.detection_voc.voc_lists` with
    ``ties="stable"`` is its NumPy twin, both checked against the transcribed references)."""
    keys = {"run_id": run_id, "matching": reference, "thresholds": [0.5]}
    for name in ("store_voc_matches", "store_voc_positives", "store_det_thresholds"):
        queries.run(store.con, f"store/{name}", keys)
    queries.run(store.con, "store/mark_det_matched", keys)


def _tide(store: Database, run_id: int) -> None:
    """TIDE's breakdown of the run and of each category, stored in det_tide."""
    con = store.con
    r = tide_inputs(stored_run(con, run_id))
    rows: list[tuple[str | None, str, float, int | None]] = [(None, "AP", r.ap, None)]
    rows += [(None, k, v, r.counts.get(k)) for k, v in {**r.main, **r.special}.items()]
    for cat, c in r.per_category.items():
        rows += [(str(cat), "AP", c.ap, None)]
        rows += [(str(cat), k, v, None) for k, v in {**c.main, **c.special}.items()]
    table = pl.DataFrame(
        rows,
        schema={"category_id": pl.String, "error": pl.String, "value": pl.Float64,
                "n_errors": pl.Int64},
        orient="row",
    ).to_arrow()  # fmt: skip
    con.register("_det_tide", table)
    try:
        queries.run(con, "store/store_det_tide", {"run_id": run_id})
        queries.run(con, "store/mark_det_matched", {"run_id": run_id, "matching": "tide"})
    finally:
        with contextlib.suppress(duckdb.Error):  # as in _store
            con.unregister("_det_tide")
