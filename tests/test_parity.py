"""Every registered metric three ways: its SQL, its NumPy twin and its slow definition agree.

One test walks the registry. For each metric, hypothesis generates runs of the metric's source
(ranked lists with heavy ties, ignored items, lists without positives, not-retrieved items,
n_positives overrides and one-item lists; keypoint runs whose match offsets land exactly on
the thresholds; outcome counts; detection runs with crowd regions, tied scores, boxes on the
area bounds and IoUs exactly on thresholds), ingests them, makes what the metric's SQL reads
and is made on first use (the matches of detection runs), reads the stored rows back as the
metric's inputs and compares, for every tie policy the SQL takes, three results to 1e-12:

- the SQL in ``sql/metrics/<name>.sql`` (what evalstore runs),
- ``metric.reference(inputs, params)`` (the vectorised NumPy core, evalstore/core/),
- ``SLOW[name](inputs, params)`` (tests/definitions.py, plain loops from the published formula).

Nothing here knows a metric by name: what differs between metrics is read from the registry
(``source``, ``params``, ``sweep``, the output columns) and from the SQL's ``$parameters``.
"""

from __future__ import annotations

import doctest
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from conftest import examples
from definitions import SLOW
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pose_runs import ingest_pose_run, pose_runs, seeded_pose_run
from single_label_data import ingest as ingest_single_label
from single_label_data import read as read_single_label
from single_label_data import seeded_run, single_label_runs

from evalstore import RunMeta, Store
from evalstore.analysis.det_matching import MATCHINGS, NEEDS_MATCHES, ensure_derived
from evalstore.core.detection import DetectionRun
from evalstore.core.ranking import TIES
from evalstore.db import queries
from evalstore.ingest.formats.boxes import BOX_FORMATS
from evalstore.metrics.pose_catalogue import RULED
from evalstore.metrics.pose_references import read_pose_run
from evalstore.metrics.protocols import PROTOCOLS
from evalstore.metrics.registry import (
    METRICS,
    Inputs,
    KeypointRun,
    Metric,
    Outcomes,
    Params,
    RankedLists,
    Result,
)
from evalstore.metrics.single_label_catalogue import PROBABILITY_CHECK, SAMPLE_CHECK

NAMES = sorted(METRICS)
K_VALUES = (1, 3, 50)
#: Sweep values that the generated match distances hit exactly: 3, 5, 10, sqrt(2), sqrt(0.3125).
SWEEP_VALUES = (0.0, 1.0, 3.0, 5.0, 10.0, math.sqrt(2.0), math.sqrt(0.3125), 2.5)
#: The values of a sweep of whole numbers (ece's bins).
WHOLE_VALUES = (1.0, 2.0, 3.0, 4.0, 10.0, 15.0)
#: The pose metrics' sweep values: AUC thresholds (degrees, pixels) > 0, and epipolar ones.
AUC_VALUES = (1.0, 3.0, 5.0, 10.0, 20.0, math.sqrt(2.0), 2.5, 7.5, 45.0)
EPIPOLAR_VALUES = (1e-4, 5e-4, 1e-3, 1e-2, 1.0)
_RUN = itertools.count()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    with Store(Path(tmp_path_factory.mktemp("parity")) / "p.duckdb") as s:
        yield s


def _run_name() -> str:
    return f"parity-{next(_RUN)}"  # a new run each time: quicker than replacing one


def _ids(values: list[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _read(store: Store, sql: str, run_id: int) -> pl.DataFrame:
    return store.con.sql(sql, params={"r": run_id}).pl()  # test-only reads of stored rows


# -- ranked lists (source "scores") -------------------------------------------------------------


@st.composite
def ranked_runs(draw: Any) -> dict[str, Any]:
    n_lists = draw(st.integers(1, 8))
    lengths = draw(st.lists(st.integers(0, 25), min_size=n_lists, max_size=n_lists))
    lengths[0] = max(lengths[0], 1)  # at least one row in the run
    n = sum(lengths)
    group = np.repeat(np.arange(n_lists), lengths)
    distinct = draw(st.sampled_from([2, 4, 1000]))  # few distinct scores = heavy ties
    scores = np.array(
        draw(st.lists(st.integers(0, distinct), min_size=n, max_size=n)), dtype=np.float64
    ) / draw(st.sampled_from([1.0, 3.0, 7.0]))
    not_retrieved = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    scores[not_retrieved & (draw(st.floats(0, 1)) < 0.5)] = -np.inf
    labels = np.array(draw(st.lists(st.sampled_from([-1, -1, 0, 1]), min_size=n, max_size=n)))
    override = None
    if draw(st.booleans()):
        present = np.unique(group)
        counts = np.array([(labels[group == g] == 1).sum() for g in present])
        extra = draw(st.lists(st.integers(0, 5), min_size=present.size, max_size=present.size))
        override = {"group_id": present, "n_positives": counts + np.array(extra)}
    gains = None
    if draw(st.booleans()):  # graded judgements: grades, halves and zeros, of any label
        gains = np.array(
            draw(st.lists(st.sampled_from([0.0, 0.0, 0.5, 1.0, 2.0, 3.0]), min_size=n, max_size=n))
        )
    return {
        "group": group,
        "scores": scores,
        "labels": labels,
        "override": override,
        "gains": gains,
    }


#: A list of 10 positives reaching recall exactly 0.3, 0.6 and 0.7, just below the VOC 2007 grid
#: values 0.30000000000000004, 0.6000000000000001 and 0.7000000000000001 of np.arange.
VOC07_TRAP = [1, 1, 1, -1, -1, -1, 1, 1, 1, -1, -1, -1, 1, 1, 1, 1]


def _seeded_ranked(rng: np.random.Generator) -> dict[str, Any]:
    group = np.repeat(np.arange(6), 40)
    trap = len(VOC07_TRAP)
    return {
        "group": np.concatenate([group, np.full(trap, 6)]),
        "scores": np.concatenate(
            [np.round(rng.standard_normal(group.size), 1), np.arange(trap, 0, -1.0)]  # ties
        ),
        "labels": np.concatenate([rng.choice([-1, -1, 0, 1], size=group.size), VOC07_TRAP]),
        "override": None,
        "gains": rng.choice([0.0, 1.0, 2.0, 3.0], size=group.size + trap),
    }


def _ingest_ranked(store: Store, data: dict[str, Any]) -> int:
    groups = None if data["override"] is None else pl.DataFrame(data["override"])
    rows = {
        "group_id": data["group"],
        "item_id": np.arange(data["group"].size),
        "score": data["scores"],
        "label": data["labels"],
        **({} if data.get("gains") is None else {"gain": data["gains"]}),
    }
    return store.ingest(  # labels drawn from +1/-1/0: pm1, whether or not a -1 came up
        rows, task="retrieval", run=_run_name(), groups=groups, labels="pm1", git_commit=None
    ).run_id


def _read_ranked(store: Store, run_id: int) -> RankedLists:
    rows = _read(
        store,
        "select group_id, item_id, score, label, seq, gain from scores"
        " where run_id = $r and task = 'retrieval' order by seq",
        run_id,
    )
    over = _read(
        store,
        "select group_id, n_positives from groups"
        " where run_id = $r and task = 'retrieval' and n_positives is not null",
        run_id,
    )
    return RankedLists(
        group=_ids(rows["group_id"].to_list()),
        scores=rows["score"].fill_null(-np.inf).to_numpy().astype(np.float64),
        labels=rows["label"].to_numpy().astype(np.int64),
        order=rows["seq"].to_numpy().astype(np.int64),
        items=np.array(rows["item_id"].to_list(), dtype=object),
        lists=_ids(over["group_id"].to_list()) if over.height else None,
        n_positives=over["n_positives"].to_numpy().astype(np.int64) if over.height else None,
        gains=rows["gain"].cast(pl.Float64).fill_null(np.nan).to_numpy(),
    )


# -- multi-label classification runs (source "scores", task classification) ---------------------


def _multilabel(pick: Callable[[list[Any]], Any], n_images: int, n_classes: int) -> dict[str, Any]:
    """(image, class) rows of a classification run, in a shuffled input order: a class per
    list, an image per item; some pairs without a row, heavy ties, scores on the sweep values
    (0, 1, 3...), NULL scores, ignored labels; class ids whose text order is not numeric."""
    divisor = pick([1.0, 3.0])
    rows = []
    for i in range(n_images):
        for c in range(n_classes):
            if pick([True, True, True, True, False]):
                score = pick([-np.inf, *(float(v) / divisor for v in range(pick([2, 4, 12])))])
                rows.append((f"c{[3, 10, 200, 21, 7, 1][c % 6]}{c // 6 or ''}", f"i{i}", score,
                             pick([-1, -1, 0, 1, 1])))  # fmt: skip
    if not rows:
        rows.append(("c3", "i0", 1.0, 1))
    order = [pick(list(range(len(rows) - j))) for j in range(len(rows))]
    shuffled = []
    for j in order:  # a draw of a permutation, item by item
        shuffled.append(rows.pop(j))
    return {"rows": shuffled}


@st.composite
def multilabel_runs(draw: Any) -> dict[str, Any]:
    pick = lambda xs: draw(st.sampled_from(xs))  # noqa: E731
    return _multilabel(pick, draw(st.integers(1, 7)), draw(st.integers(1, 7)))


def _seeded_multilabel(rng: np.random.Generator) -> dict[str, Any]:
    return _multilabel(lambda xs: xs[int(rng.integers(len(xs)))], 40, 8)


def _ingest_multilabel(store: Store, data: dict[str, Any]) -> int:
    frame = pl.DataFrame(
        data["rows"], schema=["group_id", "item_id", "score", "label"], orient="row"
    )
    return store.ingest(
        frame, task="classification", run=_run_name(), labels="pm1", git_commit=None
    ).run_id


def _read_multilabel(store: Store, run_id: int) -> RankedLists:
    rows = _read(
        store,
        "select group_id, item_id, score, label, seq from scores"
        " where run_id = $r and task = 'classification' order by seq",
        run_id,
    )
    return RankedLists(
        group=_ids(rows["group_id"].to_list()),
        scores=rows["score"].fill_null(-np.inf).to_numpy().astype(np.float64),
        labels=rows["label"].to_numpy().astype(np.int64),
        order=rows["seq"].to_numpy().astype(np.int64),
        items=np.array(rows["item_id"].to_list(), dtype=object),
    )


# -- keypoint matches and image pairs (source "pairs") ------------------------------------------

OFFSETS = [(0.0, 0.0), (3.0, 0.0), (0.0, -3.0), (3.0, 4.0), (1.0, 1.0), (6.0, 8.0), (0.5, 0.25)]
H_TRUE = [[1.0, 0.0, 4.0], [0.0, 1.0, -2.0], [0.0, 0.0, 1.0]]  # gt = (x0 + 4, y0 - 2)
# A truth that also scales y by 1.01: a translation estimate's corner error then grows with y,
# so the corner sets (the image's, SuperPoint's (x to height-1, y to width-1)) give different
# errors and the homography metrics must pick the right corners to agree.
H_SCALED = [[1.0, 0.0, 4.0], [0.0, 1.01, -2.0], [0.0, 0.0, 1.0]]
HOMOGRAPHY = [f"{m}{i}{j}" for m in "her" for i in (1, 2, 3) for j in (1, 2, 3)]


def _keypoints(pick: Callable[[list[Any]], Any], jitter: Callable[[], float]) -> dict[str, Any]:
    """Pairs with 0..30 matches whose offsets from the truth often land exactly on a threshold
    (3, 5, 10 px); some pairs have no true homography or too few matches to estimate one."""
    n_pairs = pick([1, 2, 3, 4, 5, 6])
    rows = []
    for p in range(n_pairs):
        # a pair whose matches share one offset gets a RANSAC estimate close to a translation,
        # whose corner error is near the eps thresholds (mixed offsets give a poor estimate)
        shared = pick([None, pick(OFFSETS)])
        for _ in range(pick([0, 3, 8, 30])):
            x0, y0 = float(pick(list(range(100)))), float(pick(list(range(80))))
            dx, dy = pick(OFFSETS) if shared is None else shared
            if shared is None and pick([False, True]):
                dx, dy = dx + jitter(), dy + jitter()
            gx, gy = x0 + 4.0, y0 - 2.0
            rows.append((f"p{p}", x0, y0, gx + dx, gy + dy, gx, gy))
    truth = [pick([None, H_TRUE, H_SCALED]) for _ in range(n_pairs)]
    pairs: dict[str, Any] = {
        "pair_id": [f"p{p}" for p in range(n_pairs)],
        "width": [pick([100, 640]) for _ in range(n_pairs)],
        "height": [pick([80, 480]) for _ in range(n_pairs)],
    }
    for i in (1, 2, 3):
        for j in (1, 2, 3):
            pairs[f"h{i}{j}"] = [None if h is None else h[i - 1][j - 1] for h in truth]
    return {"rows": rows, "pairs": pairs}


@st.composite
def keypoint_runs(draw: Any) -> dict[str, Any]:
    return _keypoints(lambda xs: draw(st.sampled_from(xs)), lambda: draw(st.floats(-2, 2)))


def _seeded_keypoints(rng: np.random.Generator) -> dict[str, Any]:
    return _keypoints(lambda xs: xs[int(rng.integers(len(xs)))], lambda: rng.uniform(-2, 2))


def _ingest_keypoints(store: Store, data: dict[str, Any]) -> int:
    columns = ["pair_id", "x0", "y0", "x1", "y1", "gt_x1", "gt_y1"]
    rows = data["rows"] or [("p0", 1.0, 1.0, 5.0, -1.0, 5.0, -1.0)]  # a run needs a match
    matches = pl.DataFrame(rows, schema=columns, orient="row")
    pairs = pl.DataFrame(data["pairs"]).with_columns(
        [pl.col(f"h{i}{j}").cast(pl.Float64) for i in (1, 2, 3) for j in (1, 2, 3)]
    )
    # estimate=True: the homographies made at ingest, as evaluate makes them on first use; the
    # metric SQL run directly here reads them (a pending pair's estimate is NULL)
    return store.ingest_keypoints(
        matches, run=_run_name(), pairs=pairs, git_commit=None, estimate=True
    ).run_id


def _read_keypoints(store: Store, run_id: int) -> KeypointRun:
    m = _read(
        store,
        "select pair_id, x0, y0, x1, y1, gt_x1, gt_y1 from v_matches"
        " where run_id = $r order by seq",
        run_id,
    )
    p = _read(store, "select * from pairs where run_id = $r order by pair_id", run_id)
    stack = p.select([pl.col(c).cast(pl.Float64) for c in HOMOGRAPHY]).to_numpy()
    h, e, r = (np.asarray(stack[:, 9 * i : 9 * i + 9], float).reshape(-1, 3, 3) for i in range(3))
    coords = {c: m[c].to_numpy().astype(np.float64) for c in m.columns if c != "pair_id"}
    return KeypointRun(
        pair=_ids(m["pair_id"].to_list()),
        pairs=_ids(p["pair_id"].to_list()),
        h=h,
        e=e,
        r=r,
        width=p["width"].cast(pl.Float64).fill_null(np.nan).to_numpy(),
        height=p["height"].cast(pl.Float64).fill_null(np.nan).to_numpy(),
        **coords,
    )


# -- counted outcomes (source "outcomes") -------------------------------------------------------

outcome_runs = st.lists(
    st.tuples(st.integers(0, 50), st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=12
)


def _seeded_outcomes(rng: np.random.Generator) -> list[tuple[int, int, int]]:
    counts = rng.integers(0, 20, size=(12, 3))
    counts[3] = 0  # a group that counted nothing
    return [tuple(int(v) for v in row) for row in counts]


def _ingest_outcomes(store: Store, counts: list[tuple[int, int, int]]) -> int:
    tp, fp, fn = (np.array(c, dtype=np.int64) for c in zip(*counts, strict=True))
    data = {"group_id": np.arange(len(counts)), "tp": tp, "fp": fp, "fn": fn}
    return store.ingest_outcomes(data, run=_run_name(), git_commit=None).run_id


def _read_outcomes(store: Store, run_id: int) -> Outcomes:
    rows = _read(store, "select group_id, tp, fp, fn from outcomes where run_id = $r", run_id)
    return Outcomes(
        group=_ids(rows["group_id"].to_list()),
        **{c: rows[c].to_numpy().astype(np.int64) for c in ("tp", "fp", "fn")},
    )


# -- detection runs (source "detections") --------------------------------------------------------

#: image ids whose text order differs from their numeric order ("10" < "200" < "21" < "3"):
#: pycocotools ranks equal scores across images in numeric id order
IMAGE_IDS = ("3", "10", "200", "21", "7")
CATEGORY_IDS = ("1", "12", "5")
#: ground-truth sides: small, on the bound 32^2, medium, on the bound 96^2, large, thin
SIDES = ((20.0, 20.0), (32.0, 32.0), (50.0, 60.0), (96.0, 96.0), (120.0, 100.0), (8.0, 30.0))
#: a detection of a ground truth (dx, dy, w factor, h factor): the box itself, IoU exactly 0.75
#: and 0.5 (on COCO's thresholds), near misses, a quarter of it, a shifted copy
NEAR = (
    (0.0, 0.0, 1.0, 1.0), (0.0, 0.0, 1.0, 0.75), (0.0, 0.0, 1.0, 0.5), (2.0, 1.0, 1.0, 1.0),
    (5.0, -3.0, 1.1, 0.9), (0.0, 0.0, 0.5, 0.5), (15.0, 10.0, 1.0, 1.0),
)  # fmt: skip
SCORES = (0.3, 0.5, 0.5, 0.7, 0.9)  # few: ties within an image and across images
#: the annotation's own area: the box's (None), exactly on a bound, a mask's half of the box
AREAS = (None, None, None, 1024.0, 9216.0, 0.5)


def _detections(
    pick: Callable[[list[Any]], Any], crowded: int, matching: str = "coco"
) -> dict[str, Any]:
    """Ground truth (some crowd regions, areas on the range bounds, repeated boxes) on 2 to 5
    images, the first without ground truth and the second without detections, in 1 to 3
    categories; detections near the ground truth or anywhere, of its category or another,
    with tied scores; ``crowded`` more on the last image in the first category.

    What the reference code of ``matching`` reads (see :func:`_kind`): VOC's runs have
    ``difficult`` objects and boxes written as corners, ``[x, y, x + w - 1, y + h - 1]`` (the
    +1 pixel convention: half an object's height is IoU exactly 0.5, on the threshold),
    some shifted by a fraction; ``voc_eval``'s have distinct scores
    (its ``np.argsort`` orders equal scores as NumPy and the CPU do); TIDE's have a first
    object that is not a crowd region and a detection on the first image, which has no
    object: tidecv divides by zero where no class keeps a detection or an object (a run of
    crowd regions alone; or a run whose every detection is ignored, once its misses are
    fixed)."""
    voc = matching in ("voc_eval", "vocevaldet")
    images = IMAGE_IDS[: pick([2, 3, 4, 5])]
    cats = list(CATEGORY_IDS[: pick([1, 2, 3])])
    truth: list[tuple] = []
    dets: list[tuple] = []
    for i, image in enumerate(images):
        for _ in range(0 if i == 0 else pick([1, 2, 3, 4])):
            cat, (w, h) = pick(cats), pick(list(SIDES))
            x, y = pick([0.0, 10.0, 40.0]), pick([0.0, 25.0])
            area = pick(list(AREAS))
            area = w * h if area is None else w * h * area if area < 1 else area
            crowd = 0 if matching == "tide" and not truth else pick([0, 0, 0, 0, 1])
            difficult = pick([0, 0, 0, 1]) if voc else 0
            truth.append((str(len(truth) + 1), image, cat, x, y, w, h, area, crowd, difficult))
            for _ in range(0 if i == 1 else pick([0, 1, 1, 2, 3])):
                dx, dy, fw, fh = pick(list(NEAR))
                label = pick([cat, cat, cat, pick(cats)])
                dets.append((image, label, x + dx, y + dy, w * fw, h * fh, pick(list(SCORES))))
        if i == 1:
            continue
        # TIDE's first image has a detection: a background error, never in a crowd region
        extra = pick([1, 2] if matching == "tide" and i == 0 else [0, 1, 2])
        extra += crowded if i == len(images) - 1 else 0
        for j in range(extra):  # anywhere, of any category (the crowded ones of the first)
            (w, h), cat = pick(list(SIDES)), cats[0] if j >= extra - crowded else pick(cats)
            x, y = pick([0.0, 10.0, 40.0, 150.0]), pick([0.0, 25.0, 150.0])
            dets.append((image, cat, x, y, w, h, pick(list(SCORES))))
    if not dets:  # pycocotools' loadRes needs one result
        dets.append((images[0], cats[0], 0.0, 0.0, 20.0, 20.0, 0.5))
    if matching == "voc_eval":  # distinct, in the order SCORES gives (ties: the later first)
        dets = [(*d[:-1], d[-1] + k * 1e-6) for k, d in enumerate(dets)]
    if not voc:
        return {"truth": truth, "detections": dets, "box_format": "xywh"}

    def corners(x: float, y: float, w: float, h: float) -> tuple[float, ...]:
        x, y = x + pick([0.0, 0.0, 0.1, 0.3]), y + pick([0.0, 0.0, 0.7])
        return x, y, x + w - 1, y + h - 1

    return {
        "truth": [(*t[:3], *corners(*t[3:7]), *t[7:]) for t in truth],
        "detections": [(*d[:2], *corners(*d[2:6]), d[6]) for d in dets],
        "box_format": "xyxy",
    }


@st.composite
def detection_runs(draw: Any, matching: str) -> dict[str, Any]:
    return _detections(lambda xs: draw(st.sampled_from(xs)), 0, matching)


def _seeded_detections(matching: str) -> Callable[[np.random.Generator], dict[str, Any]]:
    """Runs with an image whose first category has more than 100 detections (maxDets)."""
    return lambda rng: _detections(lambda xs: xs[int(rng.integers(len(xs)))], 110, matching)


def _ingest_detections(store: Store, data: dict[str, Any]) -> int:
    box = {c: pl.Float64 for c in BOX_FORMATS[data["box_format"]]}
    key = {"image_id": pl.String, "category": pl.String}
    flags = {"iscrowd": pl.Int64, "difficult": pl.Int64}
    truth = pl.DataFrame(
        data["truth"], schema={"id": pl.String, **key, **box, "area": pl.Float64, **flags},
        orient="row",
    )  # fmt: skip
    dets = pl.DataFrame(
        data["detections"], schema={**key, **box, "score": pl.Float64}, orient="row"
    )
    meta = RunMeta(_run_name(), git_commit=False)
    return store.ingest_detections(dets, truth, meta=meta, box_format=data["box_format"]).run_id


def _read_detections(store: Store, run_id: int) -> DetectionRun:
    """The stored run as the references read it: detections in input order with pycocotools'
    ids (det_id + 1, as loadRes numbers them), ground truth in input order (seq); the corners
    x1, y1, x2, y2 as the input wrote them (NaN where it wrote x, y, w, h)."""
    images = _read(store, "select image_id from det_images where run_id = $r", run_id)
    cats = _read(store, "select category_id from det_categories where run_id = $r", run_id)
    dets = _read(
        store,
        "select det_id, image_id, category_id, x, y, w, h, score, area, x1, y1, x2, y2"
        " from det_boxes"
        " where run_id = $r order by det_id",
        run_id,
    )
    gts = _read(
        store,
        "select gt_id, image_id, category_id, x, y, w, h, area, iscrowd, difficult, x1, y1, x2,"
        " y2 from det_truth where run_id = $r order by seq",
        run_id,
    )
    dt = {c: dets[c].to_numpy() for c in dets.columns}
    dt["id"] = dt["det_id"] + 1
    gt = {c: gts[c].to_numpy() for c in gts.columns if c != "difficult"}
    gt["id"] = gt["gt_id"]
    gt["iscrowd"] = gt["iscrowd"].astype(np.int64)
    gt["difficult"] = gts["difficult"].fill_null(False).to_numpy()
    return DetectionRun(images["image_id"].to_numpy(), cats["category_id"].to_numpy(), dt, gt)


# -- single-label classification runs (source "scores", checked as single-label) ---------------


def _ingest_single_label(store: Store, rows: dict[str, Any]) -> int:
    return ingest_single_label(store, rows, _run_name())


# -- the sources, by Metric.source --------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """How to generate, store and read back a run of one source table."""

    task: str
    runs: st.SearchStrategy[Any]
    seeded: Callable[[np.random.Generator], Any]
    ingest: Callable[[Store, Any], int]
    read: Callable[[Store, int], Inputs]
    atol: float  # pixel errors near 0 are compared absolutely; fractions relatively only


SOURCES = {
    "scores": Source("retrieval", ranked_runs(), _seeded_ranked, _ingest_ranked, _read_ranked, 0.0),
    "pairs": Source(
        "keypoints", keypoint_runs(), _seeded_keypoints, _ingest_keypoints, _read_keypoints, 1e-12
    ),
    "outcomes": Source(
        "outcomes", outcome_runs, _seeded_outcomes, _ingest_outcomes, _read_outcomes, 0.0
    ),
    "cameras": Source(
        "keypoints",
        pose_runs(),
        seeded_pose_run,
        lambda store, data: ingest_pose_run(store, data, _run_name()),
        lambda store, run_id: read_pose_run(store.con, run_id),
        1e-12,
    ),
    "scores/single_label": Source(
        "classification",
        single_label_runs(),
        seeded_run,
        _ingest_single_label,
        read_single_label,
        0.0,
    ),
    "scores/probabilities": Source(
        "classification",
        single_label_runs(probabilities=True),
        lambda rng: seeded_run(rng, probabilities=True),
        _ingest_single_label,
        read_single_label,
        0.0,
    ),
    "scores/multilabel": Source(
        "classification",
        multilabel_runs(),
        _seeded_multilabel,
        _ingest_multilabel,
        _read_multilabel,
        0.0,
    ),
    **{
        f"detections/{matching}": Source(
            "detection",
            detection_runs(matching),
            _seeded_detections(matching),
            _ingest_detections,
            _read_detections,
            0.0,
        )
        for matching in MATCHINGS
    },
}


def _kind(metric: Metric) -> str:
    """The key of the metric's runs in SOURCES: its source; for detection runs with the
    matching its SQL reads, whose reference code the runs suit (:func:`_detections`); for
    single-label metrics (checked before they run) single-label runs, of probabilities where
    the metric reads scores as such; for the other metrics of classification runs alone (the
    multi-label ones) runs whose images have a row in several classes (:func:`_multilabel`)."""
    if PROBABILITY_CHECK in metric.checks:
        return "scores/probabilities"
    if SAMPLE_CHECK in metric.checks:
        return "scores/single_label"
    if metric.source == "scores" and metric.tasks == ("classification",):
        return "scores/multilabel"
    if metric.source != "detections":
        return metric.source
    return f"detections/{NEEDS_MATCHES.get(metric.name, 'coco')}"


def _ties(metric: Metric) -> tuple[str, ...]:
    """Every tie policy if the metric's SQL takes ``$ties``, else the default alone."""
    return TIES if metric.takes_ties else ("grouped",)


#: the sweep values of the pose metrics, by name
POSE_SWEEPS = {
    "epipolar_precision": EPIPOLAR_VALUES, "matching_score": EPIPOLAR_VALUES,
    "pose_auc": AUC_VALUES, "homography_auc": AUC_VALUES,
}  # fmt: skip
#: the rules a pose metric is read under: the default and every protocol's
POSE_RULES = (None, *(p.pose for p in PROTOCOLS.values() if p.pose is not None))


def _params(metric: Metric) -> st.SearchStrategy[Params]:
    k = st.sampled_from(K_VALUES) if "$k" in metric.query.text else st.none()
    at = st.none()
    if metric.sweep is not None:
        values = WHOLE_VALUES if metric.sweep.whole else SWEEP_VALUES
        values = POSE_SWEEPS.get(metric.name, values)
        at = st.one_of(
            st.none(), st.lists(st.sampled_from(values), min_size=1, max_size=4, unique=True)
        )
    pose = st.sampled_from(POSE_RULES) if metric.name in RULED else st.none()
    return st.builds(Params, k=k, at=at, pose=pose)


# -- comparing -----------------------------------------------------------------------------------


def _sql(store: Store, metric: Metric, run_ids: list[int], params: Params) -> pl.DataFrame:
    task = SOURCES[_kind(metric)].task
    query = metric.query_for(params.ties)  # the registry names each tie policy's file
    return queries.fetch(store.con, query, metric.sql_params(run_ids, task, params))


def _as_result(frame: pl.DataFrame, metric: Metric) -> Result:
    value = frame[metric.value_column].cast(pl.Float64).fill_null(np.nan).to_numpy()
    at = None if metric.at_column is None else frame[metric.at_column].to_numpy().astype(float)
    return Result(_ids(frame["group_id"].to_list()), value, at)


def _assert_same(have: Result, want: Result, atol: float, what: str) -> None:
    have, want = have.sorted(), want.sorted()
    assert have.group.tolist() == want.group.tolist(), f"{what}: different rows"
    assert (have.at is None) == (want.at is None), what
    if want.at is not None:
        np.testing.assert_allclose(have.at, want.at, rtol=1e-12, atol=0, err_msg=what)
    np.testing.assert_allclose(
        have.value, want.value, rtol=1e-12, atol=atol, equal_nan=True, err_msg=what
    )


def _check(store: Store, metric: Metric, run_ids: list[int], params: Params) -> None:
    """SQL over all ``run_ids`` at once, NumPy core and slow loop of each run agree."""
    source = SOURCES[_kind(metric)]
    with store.transaction():  # what the SQL reads and evaluate makes on first use (matches)
        ensure_derived(store, metric, run_ids)
    inputs = {run_id: source.read(store, run_id) for run_id in run_ids}
    for ties in _ties(metric):
        p = replace(params, ties=ties)
        got = _sql(store, metric, run_ids, p)
        for run_id, data in inputs.items():
            what = f"{metric.name}, run {run_id}, {p}"
            want = metric.reference(data, p)
            sql = _as_result(got.filter(pl.col("run_id") == run_id), metric)
            _assert_same(sql, want, source.atol, f"SQL vs NumPy: {what}")
            _assert_same(SLOW[metric.name](data, p), want, source.atol, f"slow vs NumPy: {what}")


# -- the tests -----------------------------------------------------------------------------------

_SETTINGS = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
}


def _three_ways(store: Store, name: str, data: st.DataObject) -> None:
    metric = METRICS[name]
    source = SOURCES[_kind(metric)]
    run = data.draw(source.runs, label="run")
    params = data.draw(_params(metric), label="params")
    _check(store, metric, [source.ingest(store, run)], params)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=examples(5), **_SETTINGS)  # the slow twin below draws 60
@given(data=st.data())
def test_sql_numpy_and_definition_agree(store: Store, name: str, data: st.DataObject) -> None:
    _three_ways(store, name, data)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=examples(60), **_SETTINGS)
@given(data=st.data())
def test_sql_numpy_and_definition_agree_many(store: Store, name: str, data: st.DataObject) -> None:
    """The same with more examples (``pytest -m slow``; the fast loop leaves it out)."""
    _three_ways(store, name, data)


@pytest.fixture(scope="module")
def seeded_runs(store: Store) -> dict[str, list[int]]:
    """Two runs of each source with the same group ids, from seeded generators.

    Pair p0 of each keypoint run gets a stored estimate exactly 3 px off its true homography
    (a corner error of exactly 3.0, on the eps threshold), which no RANSAC estimate gives.
    """
    rng = np.random.default_rng(7)
    runs = {
        name: [source.ingest(store, source.seeded(rng)) for _ in range(2)]
        for name, source in SOURCES.items()
    }
    for run_id in runs["pairs"]:
        store.con.execute(  # test-only: a boundary case written into the stored rows
            "update pairs set h11 = 1, h12 = 0, h13 = 4, h21 = 0, h22 = 1, h23 = -2, h31 = 0,"
            " h32 = 0, h33 = 1, e11 = 1, e12 = 0, e13 = 7, e21 = 0, e22 = 1, e23 = -2, e31 = 0,"
            " e32 = 0, e33 = 1, e_direction = 'direct' where run_id = $r and pair_id = 'p0'",
            {"r": run_id},
        )
    return runs


@pytest.mark.parametrize("name", NAMES)
def test_sql_of_several_runs_at_once(
    store: Store, seeded_runs: dict[str, list[int]], name: str
) -> None:
    """One query over two runs with the same group ids: every list keeps to its own run
    (windows are partitioned by list_id alone)."""
    metric = METRICS[name]
    _check(store, metric, seeded_runs[_kind(metric)], Params(k=5 if "k" in metric.params else None))


def _parametrised_names(test: Any) -> set[str]:
    """The metric names a test is parametrised over, read from its pytest marks."""
    marks = [m for m in getattr(test, "pytestmark", []) if m.name == "parametrize"]
    return {v for m in marks if m.args[0] == "name" for v in m.args[1]}


def test_every_metric_is_covered_by_a_parity_test() -> None:
    """The metrics the parity tests run are exactly those with SQL, a NumPy twin and a slow
    definition, and the sources and parameters they take are ones the tests can generate."""
    sql_files = {p.stem for p in (queries.sql_dir() / "metrics").glob("*.sql")}
    assert sql_files, "no metric SQL found"
    assert {f for m in METRICS.values() for f in m.sql_files} == sql_files
    # and each file is one that _check runs beside its metric's NumPy twin: a tie policy's
    # own file (ap_ranked for ap) under a policy the metric is checked with
    reached = {m.query_for(t).path.stem for m in METRICS.values() for t in _ties(m)}
    assert reached == sql_files, sorted(sql_files - reached)
    assert set(SLOW) == set(METRICS)
    for test in (test_sql_numpy_and_definition_agree, test_sql_of_several_runs_at_once):
        assert _parametrised_names(test) == set(METRICS), test.__name__
    for metric in METRICS.values():
        assert _kind(metric) in SOURCES, metric.name
        assert set(metric.params) <= {"k"}, f"{metric.name}: no strategy for {metric.params}"
        assert ("k" in metric.params) == ("$k" in metric.query.text), metric.name
        if metric.sweep is not None:
            assert f"${metric.sweep.param}" in metric.query.text, metric.name


def test_every_metric_has_sql_and_reference() -> None:
    for name, metric in METRICS.items():
        assert (queries.sql_dir() / "metrics" / f"{name}.sql").is_file()
        assert callable(metric.reference) and metric.reference.__doc__, name
        assert SLOW[name].__doc__, f"the slow definition of {name} needs its formula"
        assert metric.query.text.lstrip().startswith("--"), f"{name}.sql needs a header comment"


def test_docstring_examples() -> None:
    import definitions
    import definitions_multilabel

    import evalstore.metrics.registry

    for module in (definitions, definitions_multilabel, evalstore.metrics.registry):
        result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0, module.__name__
        assert result.attempted > 0, module.__name__
