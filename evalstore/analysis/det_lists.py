"""The ranked lists of detection runs, made when a metric of ranked lists first needs them.

A detection run evaluated by ``ap``, ``ndcg``, ``precision_at_k`` or any metric of ranked
lists (task ``detection``) is read as one ranked list per (category, IoU threshold) under
COCO's matching (:mod:`evalstore.analysis.det_matching`, pycocotools' ``evaluateImg``), area
range ``all`` and ``maxDets`` 100: the category's kept detections, best score first, labelled
+1 (matched to an object), -1 (unmatched) or 0 (matched to a crowd region: ignored), and the
objects no detection found at that threshold, +1 and not retrieved. The first such metric
writes them as ranked lists like any ingested ones (``groups``, a row table, the list index:
sql/store/det_lists.sql), so every metric of ranked lists, tie policy, statistic and export
reads them unchanged; they go with their run.

Each list's ``group_id`` is ``<category>@<IoU threshold>`` (``18@0.50``) and its slices
``iou``, ``area`` and ``max_dets``: ``evalstore eval RUN -m ap --by iou`` gives the mean AP
at each threshold. Equal scores keep pycocotools' order in ``seq``, so ``--ties input`` ranks
them as COCO does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from evalstore.analysis.det_matching import ensure_matches
from evalstore.core.detection import COCO_AREA_RANGES, COCO_MAX_DETS
from evalstore.db import queries
from evalstore.errors import InvalidInput
from evalstore.ingest.index import index_lists

if TYPE_CHECKING:
    from evalstore.db.connection import Database

__all__ = ["ROW_TABLE", "ensure_lists"]

#: the row table of the lists: text items ("det:<det_id>", "gt:<gt_id>"), float64 scores
ROW_TABLE = "list_rows_text_f64"


def ensure_lists(store: Database, run_ids: Sequence[int], *, needed_by: str) -> int:
    """Make and store the ranked lists of the detection runs among ``run_ids`` that have none
    yet (their COCO matches first, if not made); call it inside a transaction of ``store``.
    Returns how many runs got lists.

    Raises:
        InvalidInput: a read-only store with lists to make (it cannot store them).
    """
    pending = queries.fetch_rows(store.con, "store/pending_det_lists", {"runs": list(run_ids)})
    if not pending:
        return 0
    if store.read_only:
        _, experiment, name = pending[0]
        raise InvalidInput(
            f"run {experiment}/{name}: {needed_by} reads the ranked lists of its detections, "
            "which are made on first use and stored; evaluate it once on a writable store "
            "(not read-only)"
        )
    ensure_matches(store, [int(r[0]) for r in pending], needed_by=needed_by, matching="coco")
    for run_id, _, _ in pending:
        _write_lists(store, int(run_id))
    return len(pending)


def _write_lists(store: Database, run_id: int) -> None:
    con = store.con
    ((first,),) = queries.fetch_rows(con, "store/next_list_id")
    lo, hi = COCO_AREA_RANGES[0]
    queries.run(con, "store/drop_det_lists")
    queries.run(con, "store/stage_det_lists", {"run_id": run_id, "first": int(first)})
    try:
        ((n,),) = queries.fetch_rows(con, "store/count_det_lists")
        ((n_boxes,),) = queries.fetch_rows(con, "store/det_run_box_count", {"run_id": run_id})
        queries.run(con, "store/set_next_list_id", {"next": int(first) + int(n)})
        queries.run(
            con, "store/insert_det_groups", {"run_id": run_id, "max_dets": COCO_MAX_DETS[-1]}
        )
        bind = {"run_id": run_id, "n_boxes": int(n_boxes), "area_lo": lo, "area_hi": hi}
        queries.run(con, "store/insert_det_list_rows", bind)
    finally:
        queries.run(con, "store/drop_det_lists")
    index_lists(con, ROW_TABLE, int(first), int(first) + int(n))
