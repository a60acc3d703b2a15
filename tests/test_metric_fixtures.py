"""Every metric against values worked out by hand: ``sql/metrics/fixtures/<metric>.txt``.

Each fixture (its format is in ``sql/README.md``) holds a few input rows, the metric's
parameters and the expected value of each list with its arithmetic. Here its rows are ingested
into a store, the metric is evaluated through ``evaluate`` (its SQL, the cache, the mean) and
through its NumPy twin (``metric.reference``), and both must give the hand values: exactly
where a double holds the value (1/2, 5/8, 0), else to 1e-12 relative (5/6, an irrational
written as a decimal).
"""

from __future__ import annotations

import itertools
import json
import math
import tempfile
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from definitions import SLOW

from evalstore import RunMeta, Store
from evalstore.analysis.evaluate import evaluate
from evalstore.core import geometry
from evalstore.core.detection import DetectionRun
from evalstore.db import queries
from evalstore.metrics.pose_inputs import PoseRun
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

FOLDER = queries.sql_dir() / "metrics" / "fixtures"
NAMES = sorted(p.stem for p in FOLDER.glob("*.txt"))
TABLES = ("scores", "groups", "matches", "pairs", "outcomes", "images", "truth", "detections",
          "cameras", "estimates")  # fmt: skip
TASK = {
    "scores": "retrieval", "pairs": "keypoints", "outcomes": "outcomes", "detections": "detection",
    "cameras": "keypoints",
}  # fmt: skip
#: the pose metrics' fixtures: cameras (pair_id k0 k1 t n_keypoints0; k0, k1 row-major 3 x 3,
#: t the 3 x 4 [R | t], each comma-separated) and the stored estimates at SuperGlue's setting
#: (pair_id threshold err_t err_r; opencv, confidence 0.99999), which RANSAC would not make
#: exactly
K_COLUMNS = [f"k{c}_{i}{j}" for c in (0, 1) for i in (1, 2, 3) for j in (1, 2, 3)]
T_COLUMNS = [f"t_{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3, 4)]


def _task(metric: Metric) -> str:
    """The task a fixture's rows are stored as: a metric of classification runs alone (the
    multi-label ones: a list per class, an item per image) reads classification rows."""
    return "classification" if metric.tasks == ("classification",) else TASK[metric.source]


HOMOGRAPHY = ("h", "e", "r")  # pairs columns of 9 comma-separated numbers, row-major, or -
_RUN = itertools.count()

#: (line, list or None, sweep value or curve x or None, value or None)
Row = tuple[int, str | None, Fraction | None, Fraction | None]


@dataclass
class Expect:
    line: int
    params: Params
    rows: list[Row] = field(default_factory=list)


@dataclass
class Fixture:
    path: Path
    tables: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    expects: list[Expect] = field(default_factory=list)


# -- reading a fixture ---------------------------------------------------------------------------


def _number(text: str, where: str) -> Fraction | None:
    if text == "null":
        return None
    if text == "inf":  # a failed pose estimate's error
        return math.inf  # type: ignore[return-value]
    try:
        return Fraction(text)  # 5/8, 0.625, 1
    except ValueError:
        raise ValueError(f"{where}: not a number, a fraction or null: {text!r}") from None


def _params(words: list[str], where: str) -> Params:
    given: dict[str, Any] = {}
    for word in words:
        key, _, value = word.partition("=")
        if key == "ties":
            given["ties"] = value
        elif key == "k":
            given["k"] = int(value)
        elif key == "at":
            given["at"] = tuple(float(v) for v in value.split(","))
        else:
            raise ValueError(f"{where}: unknown parameter {word!r} (ties=, k=, at=)")
    return Params(**given)


def parse(path: Path) -> Fixture:
    """The tables and expectations of a fixture file; a malformed line raises ValueError."""
    fixture = Fixture(path)
    block: list[Any] | None = None  # the rows of the table or expectation being read
    header: list[str] | None = None
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        words = raw.split("--", 1)[0].split()
        where = f"{path.name}:{number}"
        if not raw.strip():
            block = None  # a blank line ends a block
        elif not words:
            continue  # a comment line
        elif block is None and words[0] in TABLES and len(words) == 1:
            if words[0] in fixture.tables:
                raise ValueError(f"{where}: a second {words[0]} table")
            block, header = fixture.tables.setdefault(words[0], []), None
        elif block is None and words[0] == "expect":
            fixture.expects.append(Expect(number, _params(words[1:], where)))
            block, header = fixture.expects[-1].rows, None
        elif block is None:
            raise ValueError(f"{where}: expected a table ({', '.join(TABLES)}) or `expect`")
        elif fixture.expects and block is fixture.expects[-1].rows:
            if len(words) not in (2, 3):
                raise ValueError(f"{where}: a row is `list value` or `list at value`")
            at = _number(words[1], where) if len(words) == 3 else None
            group = None if words[0] == "-" else words[0]
            block.append((number, group, at, _number(words[-1], where)))
        elif header is None:
            header = words
        elif len(words) != len(header):
            raise ValueError(f"{where}: {len(words)} values for the {len(header)} columns")
        else:
            block.append(dict(zip(header, words, strict=True)))
    return fixture


# -- storing it and reading it as the twin does ---------------------------------------------------


def _ids(values: list[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _matrices(rows: list[dict[str, str]], column: str) -> np.ndarray:
    """(P, 3, 3): each row's homography, all NaN where it is ``-`` or the column is absent."""
    out = np.full((len(rows), 3, 3), np.nan)
    for i, row in enumerate(rows):
        if row.get(column, "-") != "-":
            out[i] = np.array([float(v) for v in row[column].split(",")]).reshape(3, 3)
    return out


def _pairs_frame(rows: list[dict[str, str]]) -> pl.DataFrame:
    h = _matrices(rows, "h").reshape(-1, 9)
    columns: dict[str, Any] = {"pair_id": [r["pair_id"] for r in rows]}
    for k, name in enumerate(f"h{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3)):
        columns[name] = pl.Series([None if math.isnan(v) else v for v in h[:, k]], dtype=pl.Float64)
    columns.update({c: [int(r[c]) for r in rows] for c in ("width", "height")})
    return pl.DataFrame(columns)


def _coco_id(text: str) -> int | str:
    """An id as a COCO file writes it: an integer where the text is one, else the text."""
    return int(text) if text.lstrip("-").isdigit() else text


CORNERS = ("x1", "y1", "x2", "y2")


def _corners(fixture: Fixture) -> bool:
    """Whether the detection tables write boxes as corners ``x1 y1 x2 y2`` (VOC's), else as
    COCO's ``x y w h``; one form for both tables. Corners are stored as box tables, which
    may hold ``difficult``; COCO's files cannot."""
    tables = [fixture.tables.get(t, []) for t in ("truth", "detections")]
    forms = {"x1" in rows[0] for rows in tables if rows}
    if len(forms) > 1:
        raise ValueError(f"{fixture.path.name}: truth and detections write boxes alike")
    corners = forms == {True}
    if not corners and any("difficult" in r for r in fixture.tables.get("truth", [])):
        raise ValueError(f"{fixture.path.name}: difficult needs boxes as x1 y1 x2 y2")
    if corners and "images" in fixture.tables:
        raise ValueError(f"{fixture.path.name}: with x1 y1 x2 y2 the images are the boxes'")
    return corners


def _boxes(rows: list[dict[str, str]]) -> dict[str, np.ndarray]:
    """``x, y, w, h`` (from corners: ``x1, y1, x2 - x1, y2 - y1``, as box tables are read,
    and the corners as written)."""
    if rows and "x1" in rows[0]:
        c = {k: np.array([float(r[k]) for r in rows], dtype=np.float64) for k in CORNERS}
        return {"x": c["x1"], "y": c["y1"], "w": c["x2"] - c["x1"], "h": c["y2"] - c["y1"], **c}
    return {c: np.array([float(r[c]) for r in rows], dtype=np.float64) for c in "xywh"}


def _box_tables(fixture: Fixture) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The detection tables as box tables (text columns, parsed as a CSV file's are), the
    category column ``category``."""
    frames = []
    for name in ("detections", "truth"):
        rows = fixture.tables.get(name, [])
        columns = list(rows[0]) if rows else ["image_id", "category", *CORNERS]
        frames.append(pl.DataFrame({c: [r[c] for r in rows] for c in columns},
                                   schema=dict.fromkeys(columns, pl.String)))  # fmt: skip
    return frames[0], frames[1]


def _detection_tables(
    fixture: Fixture,
) -> tuple[list[str], list[str], list[dict[str, str]], list[dict[str, str]]]:
    """The images (the ``images`` table, else those the boxes name, in order), the categories
    (those the boxes name, ground truth first), the ground truth and the detections."""
    truth, dets = fixture.tables.get("truth", []), fixture.tables["detections"]
    boxes = [*truth, *dets]
    listed = fixture.tables.get("images")
    images = [r["image_id"] for r in listed] if listed else [r["image_id"] for r in boxes]
    categories = [r["category"] for r in boxes]
    return list(dict.fromkeys(images)), list(dict.fromkeys(categories)), truth, dets


def _coco_files(fixture: Fixture, folder: Path) -> tuple[Path, Path]:
    """The fixture's detection tables as COCO's two files (annotations, results) in ``folder``."""
    images, categories, truth, dets = _detection_tables(fixture)
    sizes = {r["image_id"]: r for r in fixture.tables.get("images", [])}
    annotations = {
        "images": [
            {
                "id": _coco_id(i),
                **{k: int(v) for k, v in sizes.get(i, {}).items() if k != "image_id"},
            }
            for i in images
        ],
        "categories": [{"id": _coco_id(c), "name": c} for c in categories],
        "annotations": [
            {
                "id": _coco_id(r["gt_id"]),
                "image_id": _coco_id(r["image_id"]),
                "category_id": _coco_id(r["category"]),
                "bbox": [float(r[c]) for c in "xywh"],
                **({"area": float(r["area"])} if "area" in r else {}),
                "iscrowd": int(r.get("iscrowd", "0")),
            }
            for r in truth
        ],
    }
    results = [
        {
            "image_id": _coco_id(r["image_id"]),
            "category_id": _coco_id(r["category"]),
            "bbox": [float(r[c]) for c in "xywh"],
            "score": float(r["score"]),
        }
        for r in dets
    ]
    gt_path, dt_path = folder / "annotations.json", folder / "results.json"
    gt_path.write_text(json.dumps(annotations), encoding="utf-8")
    dt_path.write_text(json.dumps(results), encoding="utf-8")
    return gt_path, dt_path


def _detection_run(fixture: Fixture) -> DetectionRun:
    """The fixture's detection tables as the twin reads a stored run: detections in input
    order numbered from 1 (as ``loadRes`` numbers them), ground truth in input order."""
    images, categories, truth, dets = _detection_tables(fixture)
    detections: dict[str, np.ndarray] = {
        "image_id": _ids([r["image_id"] for r in dets]),
        "category_id": _ids([r["category"] for r in dets]),
        "id": np.arange(1, len(dets) + 1),
        "score": np.array([float(r["score"]) for r in dets], dtype=np.float64),
        **_boxes(dets),
    }
    ground_truth: dict[str, np.ndarray] = {
        "image_id": _ids([r["image_id"] for r in truth]),
        "category_id": _ids([r["category"] for r in truth]),
        "id": _ids([r["gt_id"] for r in truth]),
        **_boxes(truth),
        "iscrowd": np.array([int(r.get("iscrowd", "0")) for r in truth], dtype=np.int64),
        "difficult": np.array([r.get("difficult", "0") == "1" for r in truth], dtype=bool),
    }
    ground_truth["area"] = np.array(
        [float(r["area"]) if "area" in r else w * h
         for r, w, h in zip(truth, ground_truth["w"], ground_truth["h"], strict=True)]
    )  # fmt: skip
    return DetectionRun(_ids(images), _ids(categories), detections, ground_truth)


def _task(metric: Metric) -> str:
    """The task a fixture's ranked lists are stored as: retrieval, or the metric's own task
    where it takes no retrieval runs (the single-label metrics: classification)."""
    return "retrieval" if "retrieval" in metric.tasks else metric.tasks[0]


def ingest(store: Store, metric: Metric, fixture: Fixture) -> tuple[str, int]:
    """Store the fixture's rows as a new run; returns its name and id."""
    run, tables = f"fixture/{metric.name}-{next(_RUN)}", fixture.tables
    if metric.source == "scores":
        rows = tables["scores"]
        data: dict[str, Any] = {c: [r[c] for r in rows] for c in ("group_id", "item_id")}
        data["score"] = [float(r["score"]) for r in rows]
        data["label"] = [int(r["label"]) for r in rows]
        if "gain" in rows[0]:
            data["gain"] = [float(r["gain"]) for r in rows]
        over = tables.get("groups")
        groups = None
        if over:
            groups = pl.DataFrame({"group_id": [r["group_id"] for r in over]}).with_columns(
                n_positives=pl.Series([int(r["n_positives"]) for r in over])
            )
        result = store.ingest(
            data, task=_task(metric), run=run, groups=groups, labels="pm1", git_commit=None
        )
    elif metric.source == "pairs":
        rows = tables["matches"]
        matches = {"pair_id": [r["pair_id"] for r in rows]}
        matches |= {c: [float(r[c]) for r in rows] for c in ("x0", "y0", "x1", "y1")}
        pairs = tables["pairs"]
        result = store.ingest_keypoints(
            matches, run=run, pairs=_pairs_frame(pairs), git_commit=None
        )
        if any(c in pairs[0] for c in ("e", "r")):  # the estimates given stand for RANSAC's
            names = [f"{m}{i}{j}" for m in "er" for i in (1, 2, 3) for j in (1, 2, 3)]
            sets = ", ".join(f"{n} = ${n}" for n in names)
            for row in pairs:
                values = np.concatenate([_matrices([row], m).reshape(9) for m in "er"])
                store.con.execute(  # test-only: the stored estimates, as test_parity writes them
                    f"update pairs set {sets}, estimated = true, e_direction = 'direct'"
                    " where run_id = $run and pair_id = $pair",
                    {
                        **{
                            n: None if math.isnan(v) else v
                            for n, v in zip(names, values, strict=True)
                        },
                        "run": result.run_id,
                        "pair": row["pair_id"],
                    },
                )
    elif metric.source == "cameras":
        result = _ingest_cameras(store, run, fixture)
    elif metric.source == "detections" and _corners(fixture):
        dets, truth = _box_tables(fixture)
        meta = RunMeta(run, git_commit=False)
        result = store.ingest_detections(dets, truth, meta=meta, box_format="xyxy")
    elif metric.source == "detections":
        with tempfile.TemporaryDirectory() as folder:
            gt_path, dt_path = _coco_files(fixture, Path(folder))
            result = store.ingest_coco(dt_path, gt_path, meta=RunMeta(run, git_commit=False))
    else:
        rows = tables["outcomes"]
        counts = {c: [int(r[c]) for r in rows] for c in ("tp", "fp", "fn")}
        data = {"group_id": [r["group_id"] for r in rows], **counts}
        result = store.ingest_outcomes(data, run=run, git_commit=None)
    return run, result.run_id


def _numbers(text: str) -> list[float]:
    return [float(v) for v in text.split(",")]


def _ingest_cameras(store: Store, run: str, fixture: Fixture) -> Any:
    """The matches, the pairs with their cameras, and the stated estimates."""
    rows, cams = fixture.tables.get("matches", []), fixture.tables["cameras"]
    matches = {"pair_id": [r["pair_id"] for r in rows]}
    matches |= {c: [float(r[c]) for r in rows] for c in ("x0", "y0", "x1", "y1")}
    pairs: dict[str, Any] = {"pair_id": [r["pair_id"] for r in cams]}
    values = [[*_numbers(r["k0"]), *_numbers(r["k1"]), *_numbers(r["t"])] for r in cams]
    for k, name in enumerate([*K_COLUMNS, *T_COLUMNS]):
        pairs[name] = [v[k] for v in values]
    n_kp = [None if r["n_keypoints0"] == "-" else int(r["n_keypoints0"]) for r in cams]
    pairs["n_keypoints0"] = pl.Series(n_kp, dtype=pl.Int64)
    result = store.ingest_keypoints(matches, run=run, pairs=pl.DataFrame(pairs), git_commit=None)
    for row in fixture.tables.get("estimates", []):
        store.con.execute(  # test-only: the estimates as stated
            "insert into pose_estimates (run_id, pair_no, method, threshold, confidence, err_t,"
            " err_r, n_inliers) select run_id, pair_no, 'opencv', $th, 0.99999, $et, $er, 0"
            " from pairs where run_id = $run and pair_id = $pair",
            {"run": result.run_id, "pair": row["pair_id"], "th": float(row["threshold"]),
             "et": float(row["err_t"]), "er": float(row["err_r"])},
        )  # fmt: skip
    return result


def _pose_run(fixture: Fixture) -> PoseRun:
    rows, est = fixture.tables.get("matches", []), fixture.tables.get("estimates", [])
    cams = sorted(fixture.tables["cameras"], key=lambda r: r["pair_id"])
    n_kp = [np.nan if r["n_keypoints0"] == "-" else float(r["n_keypoints0"]) for r in cams]
    return PoseRun(
        pairs=_ids([r["pair_id"] for r in cams]),
        k0=np.array([_numbers(r["k0"]) for r in cams]).reshape(-1, 3, 3),
        k1=np.array([_numbers(r["k1"]) for r in cams]).reshape(-1, 3, 3),
        t=np.array([_numbers(r["t"]) for r in cams]).reshape(-1, 3, 4),
        n_keypoints0=np.array(n_kp),
        pair=_ids([r["pair_id"] for r in rows]),
        **{c: np.array([float(r[c]) for r in rows]) for c in ("x0", "y0", "x1", "y1")},
        est_pair=_ids([r["pair_id"] for r in est]),
        est_method=_ids(["opencv"] * len(est)),
        est_threshold=np.array([float(r["threshold"]) for r in est]),
        est_confidence=np.full(len(est), 0.99999),
        err_t=np.array([float(r["err_t"]) for r in est]),
        err_r=np.array([float(r["err_r"]) for r in est]),
    )


def twin_inputs(metric: Metric, fixture: Fixture) -> Inputs:
    """The fixture's rows as the NumPy twin reads a run, in input order."""
    tables = fixture.tables
    if metric.source == "scores":
        rows, over = tables["scores"], tables.get("groups")
        return RankedLists(
            group=_ids([r["group_id"] for r in rows]),
            scores=np.array([float(r["score"]) for r in rows]),
            labels=np.array([int(r["label"]) for r in rows]),
            order=np.arange(len(rows)),
            items=_ids([r["item_id"] for r in rows]),
            gains=np.array([float(r["gain"]) for r in rows]) if "gain" in rows[0] else None,
            lists=_ids([r["group_id"] for r in over]) if over else None,
            n_positives=np.array([int(r["n_positives"]) for r in over]) if over else None,
        )
    if metric.source == "pairs":
        rows = tables["matches"]
        pairs = sorted(tables["pairs"], key=lambda r: r["pair_id"])
        index = {r["pair_id"]: i for i, r in enumerate(pairs)}
        h = _matrices(pairs, "h")
        x0, y0, x1, y1 = (np.array([float(r[c]) for r in rows]) for c in ("x0", "y0", "x1", "y1"))
        gx, gy = geometry.transfer(h[[index[r["pair_id"]] for r in rows]], x0, y0)
        return KeypointRun(
            pair=_ids([r["pair_id"] for r in rows]),
            x0=x0,
            y0=y0,
            x1=x1,
            y1=y1,
            gt_x1=gx,
            gt_y1=gy,
            pairs=_ids(list(index)),
            h=h,
            e=_matrices(pairs, "e"),
            r=_matrices(pairs, "r"),
            width=np.array([float(r["width"]) for r in pairs]),
            height=np.array([float(r["height"]) for r in pairs]),
        )
    if metric.source == "detections":
        return _detection_run(fixture)
    if metric.source == "cameras":
        return _pose_run(fixture)
    rows = tables["outcomes"]
    return Outcomes(
        group=_ids([r["group_id"] for r in rows]),
        **{c: np.array([int(r[c]) for r in rows]) for c in ("tp", "fp", "fn")},
    )


# -- the two ways a metric is computed ------------------------------------------------------------

Got = list[tuple[str | None, float | None, float | None]]


def through_sql(
    store: Store, metric: Metric, run: tuple[str, int], params: Params
) -> tuple[Got, Any]:
    """The per-list values ``evaluate`` stores (a curve: its SQL's rows), and the means."""
    name, run_id = run
    if metric.kind == "curve":
        query = metric.query_for(params.ties)  # the file of the tie policy's strategy
        frame = queries.fetch(store.con, query, metric.sql_params([run_id], _task(metric), params))
        assert metric.x_column is not None
        columns = (frame["group_id"], frame[metric.x_column], frame[metric.value_column])
        return list(zip(*(c.to_list() for c in columns), strict=True)), None
    sweeps = None if params.at is None or metric.sweep is None else {metric.sweep.column: params.at}
    ties = params.ties if metric.source == "scores" else None
    means = evaluate(store, [name], metrics=[metric.name], ties=ties, k=params.k, sweeps=sweeps)
    rows = store.con.execute(  # test-only: what evaluate stored per list
        "select group_id, params, value from list_values where run_id = $run and metric = $metric",
        {"run": run_id, "metric": metric.name},
    ).fetchall()
    now = set(means["params"])  # the parameters of this call (the run holds earlier ones too)
    column = metric.at_column
    got = [
        (g, None if column is None else json.loads(p)[column], v) for g, p, v in rows if p in now
    ]
    if metric.overall == "run row":  # TIDE's: the run's value (list `-`) is stored as the overall
        overall = means.filter(pl.col("slice") == "").to_dicts()
        got += [
            (None, None if column is None else json.loads(r["params"])[column], r["value"])
            for r in overall
        ]
    return got, means


def through_twin(metric: Metric, fixture: Fixture, params: Params) -> Got:
    return _rows(metric.reference(twin_inputs(metric, fixture), params))


def through_reference_code(metric: Metric, fixture: Fixture, params: Params) -> Got:
    """A detection metric's slow definition, which is its reference's own code run on the
    rows (pycocotools for COCO's numbers: tests/definitions.py)."""
    return _rows(SLOW[metric.name](twin_inputs(metric, fixture), params))


def _rows(result: Result) -> Got:
    at = [None] * result.value.size if result.at is None else result.at.tolist()
    return list(zip(result.group.tolist(), at, result.value.tolist(), strict=True))


# -- comparing with the hand values ---------------------------------------------------------------


def agrees(got: float | None, want: Fraction | None) -> bool:
    """Exactly where a double holds ``want``, else to 1e-12 relative; None and NaN are NULL."""
    if want is None or got is None or math.isnan(got):
        return want is None and (got is None or math.isnan(got))
    if want == math.inf:
        return got == math.inf
    if Fraction(float(want)) == want:
        return got == float(want)
    return math.isclose(got, float(want), rel_tol=1e-12, abs_tol=0.0)


def _order(group: str | None, at: Any, value: Any) -> tuple[str, float, float]:
    number = lambda v: -math.inf if v is None or v != v else float(v)  # noqa: E731
    return ("" if group is None else group, number(at), number(value))


def compare(got: Got, expect: Expect, fixture: Fixture, way: str) -> None:
    where = f"{fixture.path.name}:{expect.line} ({way}, {expect.params})"
    have = sorted(got, key=lambda r: _order(*r))
    want = sorted(expect.rows, key=lambda r: _order(*r[1:]))
    assert len(have) == len(want), f"{where}: {len(have)} rows, expected {len(want)}: {have}"
    for (g, at, value), (line, group, want_at, want_value) in zip(have, want, strict=True):
        row = f"{fixture.path.name}:{line} ({way}, {expect.params})"
        assert g == group, f"{row}: list {g!r}, expected {group!r}"
        assert (at is None) == (want_at is None) and (at is None or agrees(at, want_at)), (
            f"{row}: at {at}, expected {want_at}"
        )
        assert agrees(value, want_value), f"{row}: {value!r}, expected {want_value}"


def compare_means(means: Any, metric: Metric, expect: Expect, fixture: Fixture) -> None:
    """``evaluate``'s mean over lists: the mean of the hand values with one, and the counts."""
    where = f"{fixture.path.name}:{expect.line} (the mean, {expect.params})"
    column = metric.at_column
    for at in sorted({r[2] for r in expect.rows}, key=lambda v: -1 if v is None else v):
        values = [r[3] for r in expect.rows if r[2] == at]
        given = [r[3] for r in expect.rows if r[2] == at and r[1] is None]
        if metric.overall == "run row":  # list `-` is the run's value, not a list's
            values = [r[3] for r in expect.rows if r[2] == at and r[1] is not None]
        present = [v for v in values if v is not None]
        row = [
            r
            for r in means.filter(pl.col("slice") == "").to_dicts()
            if at is None or json.loads(r["params"])[column] == float(at)
        ]
        assert len(row) == 1, f"{where}: {len(row)} mean rows at {at}"
        mean = sum(present, Fraction(0)) / len(present) if present else None
        mean = given[0] if metric.overall == "run row" else mean
        assert agrees(row[0]["value"], mean), f"{where}: mean {row[0]['value']}, expected {mean}"
        assert (row[0]["n_lists"], row[0]["n_skipped"]) == (
            len(present),
            len(values) - len(present),
        )


# -- the tests -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    with Store(Path(tmp_path_factory.mktemp("fixtures")) / "f.duckdb") as s:
        yield s


def test_every_built_in_metric_has_a_fixture() -> None:
    built_in = sorted(name for name, metric in METRICS.items() if metric.path is None)
    assert built_in == NAMES, "add sql/metrics/fixtures/<metric>.txt (sql/README.md)"


@pytest.mark.parametrize("name", NAMES)
def test_sql_and_twin_give_the_values_worked_by_hand(store: Store, name: str) -> None:
    metric = METRICS[name]
    fixture = parse(FOLDER / f"{name}.txt")
    assert fixture.expects, f"{name}.txt expects nothing"
    run = ingest(store, metric, fixture)
    for expect in fixture.expects:
        assert expect.rows, f"{name}.txt:{expect.line}: no rows"
        arity = {r[2] is None for r in expect.rows}
        assert arity == {metric.at_column is None}, f"{name}.txt:{expect.line}: `list at value`"
        assert (expect.params.k is not None) == ("k" in metric.params), f"{name}.txt: k="
        got, means = through_sql(store, metric, run, expect.params)
        compare(got, expect, fixture, "SQL")
        if means is not None:
            compare_means(means, metric, expect, fixture)
        compare(through_twin(metric, fixture, expect.params), expect, fixture, "NumPy twin")
        if metric.source == "detections":  # the hand values are the reference code's too
            got = through_reference_code(metric, fixture, expect.params)
            compare(got, expect, fixture, "reference code")


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("scores\ngroup_id score\nq1 1 2\n", "3 values for the 2 columns"),
        ("expect tie=grouped\nq1 1\n", "unknown parameter 'tie=grouped'"),
        ("expect\nq1 five\n", "not a number"),
        ("score\n", "expected a table"),
    ],
)
def test_a_malformed_fixture_is_refused(tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(ValueError, match=error):
        parse(path)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            "truth\ngt_id image_id category x y w h difficult\n1 1 a 0 0 9 9 1\n",
            "difficult needs boxes as x1 y1 x2 y2",
        ),
        (
            "truth\ngt_id image_id category x1 y1 x2 y2\n1 1 a 0 0 9 9\n\n"
            "detections\nimage_id category x y w h score\n1 a 0 0 9 9 1\n",
            "truth and detections write boxes alike",
        ),
        (
            "images\nimage_id\n1\n\ntruth\ngt_id image_id category x1 y1 x2 y2\n1 1 a 0 0 9 9\n",
            "the images are the boxes'",
        ),
    ],
)
def test_a_detection_fixture_writes_boxes_one_way(tmp_path: Path, text: str, error: str) -> None:
    """Corners (VOC's) are stored as box tables, which hold ``difficult`` but no image table;
    COCO's ``x y w h`` as COCO's files, which hold no ``difficult``."""
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(ValueError, match=error):
        _corners(parse(path))
