"""``evalstore.core.detection_voc`` against the VOC detection references, transcribed in
``reference_voc_det.py`` (py-faster-rcnn ``voc_eval`` verbatim, ``VOCevaldet.m`` line by
line), on seeded synthetic sets with ties, difficult objects, duplicates, images without
objects, classes without objects, fractional boxes and boxes at IoU exactly 0.5 (+1 pixel
convention); and the bridge: the lists, read by evalstore's ranked-list twins of ``ap_voc07``,
``ap_voc07_numpy`` and ``ap_voc10`` with ties in ``seq`` order, give the same AP but where
the references' NaN conventions differ (:func:`bridge_departure`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from evalstore.core.detection_voc import VocLists, voc_ap_of_lists, voc_lists
from evalstore.core.point_metrics import (
    ap_voc07_numpy_of_points,
    ap_voc07_of_points,
    ap_voc10_of_points,
)
from evalstore.core.points import ranking_points
from evalstore.errors import InvalidInput
from tests.conformance import reference_voc_det as ref

CLASSES = ("bird", "cat", "dog")
NO_OBJECTS = "person"  # detected, never annotated: npos = 0


@dataclass
class VocSet:
    """A test set: image ids (the image set), objects and detections, in file order."""

    images: list[str]
    objects: list[tuple[str, str, list[int], int]] = field(default_factory=list)
    dets: list[tuple[str, str, float, list[float]]] = field(default_factory=list)

    def det_columns(self) -> dict[str, Any]:
        return _columns(
            [(i, c, s, *b) for i, c, s, b in self.dets],
            ("image_id", "class", "score", "x1", "y1", "x2", "y2"),
        )

    def gt_columns(self) -> dict[str, Any]:
        return _columns(
            [(i, c, *b, d) for i, c, b, d in self.objects],
            ("image_id", "class", "x1", "y1", "x2", "y2", "difficult"),
        )

    def recs(self) -> dict[str, list[dict[str, Any]]]:
        """``parse_rec``'s dicts per image (``name``, ``bbox``, ``difficult``; for the devkit
        also ``class``)."""
        out: dict[str, list[dict[str, Any]]] = {i: [] for i in self.images}
        for image, cls, box, difficult in self.objects:
            out[image].append({"name": cls, "class": cls, "bbox": box, "difficult": difficult})
        return out

    def class_dets(self, cls: str) -> list[tuple[str, float, list[float]]]:
        return [(i, s, b) for i, c, s, b in self.dets if c == cls]

    def lines(self, cls: str) -> list[str]:
        """The ``comp4_det_<set>_<cls>.txt`` lines; ``repr`` round-trips each double."""
        return [
            " ".join([i, repr(s), *(repr(float(v)) for v in b)]) + "\n"
            for i, s, b in self.class_dets(cls)
        ]


def _columns(rows: list[tuple[Any, ...]], names: tuple[str, ...]) -> dict[str, Any]:
    cols = list(zip(*rows, strict=True)) if rows else [()] * len(names)
    out: dict[str, Any] = {}
    for name, col in zip(names, cols, strict=True):
        kind = object if name in ("image_id", "class") else float
        out[name] = np.array(col, dtype=kind if name != "difficult" else np.int64)
    return out


def synthetic(seed: int, n_images: int = 10) -> VocSet:
    """Seeded: a third of the images without objects; 1-4 objects on the others, a quarter
    difficult; per object 0-3 jittered detections (duplicates), sometimes one at IoU exactly
    0.5 (the upper half of an even-height object), sometimes one of another class; 0-3
    background boxes per image, some of class ``person`` (never annotated); scores mostly
    from 9 values (ties), some fractional box corners."""
    rng = np.random.default_rng(seed)
    data = VocSet(images=[f"{2007000 + k:06d}" for k in range(n_images)])
    for image in data.images:
        if rng.random() < 0.33:
            continue
        for _ in range(int(rng.integers(1, 5))):
            x1, y1 = (int(v) for v in rng.integers(0, 80, 2))
            w, h = (int(v) for v in rng.integers(4, 40, 2))
            box = [x1, y1, x1 + w - 1, y1 + h - 1]
            data.objects.append((image, str(rng.choice(CLASSES)), box, int(rng.random() < 0.25)))
    for image, cls, box, _ in list(data.objects):
        for _ in range(int(rng.choice([0, 1, 1, 2, 3]))):
            jit = [float(v) for v in rng.integers(-3, 4, 4)]
            b = [box[0] + jit[0], box[1] + jit[1], box[2] + jit[2], box[3] + jit[3]]
            b[2], b[3] = max(b[2], b[0]), max(b[3], b[1])
            if rng.random() < 0.2:
                b = [v + 0.5 for v in b]
            data.dets.append((image, cls, _score(rng), b))
        h = box[3] - box[1] + 1
        if h % 2 == 0 and rng.random() < 0.3:  # IoU (w*h/2) / (w*h) = 0.5 exactly
            data.dets.append(
                (
                    image,
                    cls,
                    _score(rng),
                    [float(box[0]), float(box[1]), float(box[2]), float(box[1] + h // 2 - 1)],
                )
            )
        if rng.random() < 0.1:
            data.dets.append(
                (
                    image,
                    str(rng.choice([*CLASSES, NO_OBJECTS])),
                    _score(rng),
                    [float(v) for v in box],
                )
            )
    for image in data.images:
        for _ in range(int(rng.integers(0, 4))):
            x1, y1 = (float(v) for v in rng.integers(0, 90, 2))
            w, h = (float(v) for v in rng.integers(3, 30, 2))
            cls = str(rng.choice([*CLASSES, NO_OBJECTS]))
            data.dets.append((image, cls, _score(rng), [x1, y1, x1 + w, y1 + h]))
    order = rng.permutation(len(data.dets))  # file order is not score order
    data.dets = [data.dets[k] for k in order]
    return data


def _score(rng: np.random.Generator) -> float:
    return float(rng.integers(1, 10)) / 10 if rng.random() < 0.6 else float(rng.random())


def same(a: float, b: float) -> bool:
    """Equal doubles, NaN equal to NaN."""
    return (math.isnan(a) and math.isnan(b)) or a == b


def close(a: float, b: float, rel: float = 1e-12) -> bool:
    return same(a, b) or abs(a - b) <= rel * abs(b)


def class_rows(lists: VocLists, g: int) -> slice:
    bounds = np.searchsorted(lists.group, [g, g + 1])
    return slice(int(bounds[0]), int(bounds[1]))


def local_index(data: VocSet) -> np.ndarray:
    """Each detection's index among its class's detections, in file order."""
    seen: dict[str, int] = {}
    out = np.empty(len(data.dets), dtype=np.int64)
    for k, (_, cls, _, _) in enumerate(data.dets):
        out[k] = seen.get(cls, 0)
        seen[cls] = out[k] + 1
    return out


# ---------------------------------------------------------------- against the references


def check_voc_eval(data: VocSet, eps_precision: bool = False) -> int:
    """Lists, order, marks and both voc_ap branches equal to voc_eval's, bit for bit.
    Returns the number of classes compared."""
    lists = voc_lists(
        data.det_columns(), data.gt_columns(), reference="voc_eval", images=data.images
    )
    local = local_index(data)
    aps = {
        f: voc_ap_of_lists(lists, formula=f, eps_precision=eps_precision)
        for f in ("voc_ap_07", "voc_ap")
    }
    recs = data.recs()
    for g, cls in enumerate(lists.classes.tolist()):
        rows = class_rows(lists, g)
        lines = data.lines(cls)
        if not lines:  # voc_eval indexes an empty BB with [sorted_ind, :]
            with pytest.raises(IndexError):
                ref.voc_eval(lines, recs, data.images, cls)
            assert aps["voc_ap_07"][g] == 0 and aps["voc_ap"][g] == 0
            continue
        out = {}
        for use_07 in (True, False):
            with np.errstate(divide="ignore", invalid="ignore"):
                out[use_07] = ref.voc_eval(
                    lines, recs, data.images, cls, use_07_metric=use_07, eps_precision=eps_precision
                )
        r = out[True]
        assert local[lists.row[rows]].tolist() == r["sorted_ind"].tolist(), cls
        assert (lists.label[rows] == 1).tolist() == (r["tp"] == 1).tolist(), cls
        assert (lists.label[rows] == -1).tolist() == (r["fp"] == 1).tolist(), cls
        assert lists.iou[rows].tolist() == r["ovmax"].tolist(), cls  # the same doubles
        assert lists.seq[rows].tolist() == list(range(1, len(lines) + 1))
        assert same(aps["voc_ap_07"][g], float(out[True]["ap"])), (
            cls,
            aps["voc_ap_07"][g],
            out[True]["ap"],
        )
        assert same(aps["voc_ap"][g], float(out[False]["ap"])), (
            cls,
            aps["voc_ap"][g],
            out[False]["ap"],
        )
    return len(lists.classes)


def check_vocevaldet(data: VocSet) -> int:
    """Lists, order and marks equal to VOCevaldet.m's; the 2007 11-point AP bit for bit,
    VOCap.m's to 1e-12 (its ``sum`` order is MATLAB's)."""
    lists = voc_lists(
        data.det_columns(), data.gt_columns(), reference="vocevaldet", images=data.images
    )
    local = local_index(data)
    ap07 = voc_ap_of_lists(lists, formula="vocevaldet_07")
    ap10 = voc_ap_of_lists(lists, formula="vocap")
    recs = data.recs()
    for g, cls in enumerate(lists.classes.tolist()):
        rows = class_rows(lists, g)
        dets = data.class_dets(cls)
        r = ref.vocevaldet(
            data.images,
            [recs[i] for i in data.images],
            cls,
            [i for i, _, _ in dets],
            [s for _, s, _ in dets],
            [b for _, _, b in dets],
        )
        assert local[lists.row[rows]].tolist() == r["si"].tolist(), cls
        assert (lists.label[rows] == 1).tolist() == (r["tp"] == 1).tolist(), cls
        assert (lists.label[rows] == -1).tolist() == (r["fp"] == 1).tolist(), cls
        assert lists.iou[rows].tolist() == r["ovmax"].tolist(), cls  # the same doubles
        assert same(ap07[g], r["ap07"]), (cls, ap07[g], r["ap07"])
        assert close(ap10[g], r["ap"]), (cls, ap10[g], r["ap"])
    return len(lists.classes)


@pytest.mark.parametrize("seed", range(6))
def test_lists_and_ap_equal_voc_eval(seed: int) -> None:
    assert check_voc_eval(synthetic(seed)) >= 3


@pytest.mark.parametrize("seed", range(3))
def test_eps_precision_equals_voc_eval_at_d66cc2bf(seed: int) -> None:
    assert check_voc_eval(synthetic(100 + seed), eps_precision=True) >= 3


@pytest.mark.parametrize("seed", range(6))
def test_lists_and_ap_equal_vocevaldet(seed: int) -> None:
    assert check_vocevaldet(synthetic(seed)) >= 3


@pytest.mark.slow
def test_random_sweep_against_both_references() -> None:
    compared = 0
    for seed in range(1000, 1060):
        data = synthetic(seed, n_images=int(np.random.default_rng(seed).integers(1, 60)))
        compared += (
            check_voc_eval(data) + check_vocevaldet(data) + check_voc_eval(data, eps_precision=True)
        )
    assert compared > 300


# ---------------------------------------------------------------- hand-worked differences


def one_class(
    dets: list[tuple[str, float, list[float]]],
    objects: list[tuple[str, list[int], int]],
    images: list[str],
) -> VocSet:
    return VocSet(
        images=images,
        objects=[(i, "cat", b, d) for i, b, d in objects],
        dets=[(i, "cat", s, b) for i, s, b in dets],
    )


def both(data: VocSet, **kw: Any) -> tuple[VocLists, VocLists]:
    args = (data.det_columns(), data.gt_columns())
    return (
        voc_lists(*args, reference="voc_eval", images=data.images, **kw),
        voc_lists(*args, reference="vocevaldet", images=data.images, **kw),
    )


def test_iou_of_exactly_half_is_a_false_positive_in_voc_eval_and_a_true_one_in_vocevaldet() -> None:
    # 10x10 inside 10x20 (+1 pixels): 100 / (100 + 200 - 100) = 0.5 exactly
    data = one_class([("a", 0.9, [0.0, 0.0, 9.0, 9.0])], [("a", [0, 0, 9, 19], 0)], ["a"])
    ve, vd = both(data)
    assert ve.iou.tolist() == vd.iou.tolist() == [0.5]
    assert ve.label.tolist() == [-1] and vd.label.tolist() == [1]
    r = ref.voc_eval(data.lines("cat"), data.recs(), data.images, "cat")
    assert r["fp"].tolist() == [1.0]
    d = ref.vocevaldet(["a"], [data.recs()["a"]], "cat", ["a"], [0.9], [[0.0, 0.0, 9.0, 9.0]])
    assert d["tp"].tolist() == [1.0]
    assert voc_ap_of_lists(ve, formula="voc_ap").tolist() == [0.0]
    assert voc_ap_of_lists(vd, formula="vocap").tolist() == [1.0]


def test_a_detection_overlapping_nothing_has_ovmax_0_in_voc_eval_and_minus_inf_in_vocevaldet() -> (
    None
):
    data = one_class(
        [("a", 0.9, [50.0, 50.0, 59.0, 59.0]), ("b", 0.8, [0.0, 0.0, 9.0, 9.0])],
        [("a", [0, 0, 9, 9], 0)],
        ["a", "b"],
    )
    ve, vd = both(data)
    assert ve.iou.tolist() == [0.0, -math.inf]  # image b has no object
    assert vd.iou.tolist() == [-math.inf, -math.inf]
    assert ve.label.tolist() == vd.label.tolist() == [-1, -1]


def test_ties_follow_numpy_argsort_in_voc_eval_and_input_order_in_vocevaldet() -> None:
    # equal scores with different outcomes: the order of the tie changes the AP
    scores = [0.5, 0.5, 0.0, 0.5, 0.5, 1.0, 1.0]
    boxes = [
        [0.0, 0.0, 9.0, 9.0],
        [40.0, 40.0, 49.0, 49.0],
        [0.0, 0.0, 9.0, 9.0],
        [20.0, 20.0, 29.0, 29.0],
        [70.0, 70.0, 79.0, 79.0],
        [40.0, 40.0, 49.0, 49.0],
        [90.0, 90.0, 99.0, 99.0],
    ]
    objects = [("a", [0, 0, 9, 9], 0), ("a", [20, 20, 29, 29], 0), ("a", [40, 40, 49, 49], 0)]
    data = one_class([("a", s, b) for s, b in zip(scores, boxes, strict=True)], objects, ["a"])
    ve, vd = both(data)
    numpy_order = np.argsort(-np.array(scores)).tolist()  # voc_eval's, on this machine
    assert ve.row.tolist() == numpy_order
    assert vd.row.tolist() == [5, 6, 0, 1, 3, 4, 2]  # stable: input order within a tie
    stable = voc_lists(data.det_columns(), data.gt_columns(), reference="voc_eval", ties="stable")
    assert stable.row.tolist() == vd.row.tolist()
    r = ref.voc_eval(data.lines("cat"), data.recs(), data.images, "cat")
    assert r["sorted_ind"].tolist() == numpy_order
    assert (ve.label == 1).tolist() == (r["tp"] == 1).tolist()
    # in input order: 5 finds object 3, 6 nothing, 0 object 1, 1 object 3 again, 3 object 2
    assert vd.label.tolist() == [1, -1, 1, -1, 1, -1, -1]


def test_a_difficult_object_at_the_top_makes_voc_eval_07_nan_until_d66cc2bf() -> None:
    six_of_11 = sum([1.0 / 11] * 6)  # p = 1 for t = 0, ..., 0.5 (rec = 1/2), added one by one
    data = one_class(
        [
            ("a", 0.9, [0.0, 0.0, 9.0, 9.0]),
            ("a", 0.8, [20.0, 20.0, 29.0, 29.0]),
            ("a", 0.7, [50.0, 50.0, 59.0, 59.0]),
        ],
        [("a", [0, 0, 9, 9], 1), ("a", [20, 20, 29, 29], 0), ("a", [40, 40, 49, 49], 0)],
        ["a"],
    )
    ve, vd = both(data)
    assert ve.label.tolist() == vd.label.tolist() == [0, 1, -1]
    assert ve.n_positives.tolist() == [2]
    with np.errstate(invalid="ignore"):
        r = ref.voc_eval(data.lines("cat"), data.recs(), data.images, "cat", use_07_metric=True)
    assert math.isnan(r["prec"][0]) and math.isnan(r["ap"])
    assert math.isnan(voc_ap_of_lists(ve, formula="voc_ap_07")[0])
    r = ref.voc_eval(
        data.lines("cat"), data.recs(), data.images, "cat", use_07_metric=True, eps_precision=True
    )
    assert (
        voc_ap_of_lists(ve, formula="voc_ap_07", eps_precision=True).tolist()
        == [r["ap"]]
        == [six_of_11]
    )
    assert voc_ap_of_lists(vd, formula="vocevaldet_07").tolist() == [six_of_11]  # max ignores NaN
    assert voc_ap_of_lists(ve, formula="voc_ap").tolist() == [0.5]


def test_missed_objects_are_rows_not_retrieved_after_the_detections() -> None:
    data = one_class(
        [("a", 0.9, [0.0, 0.0, 9.0, 9.0]), ("b", 0.4, [0.0, 0.0, 9.0, 9.0])],
        [
            ("a", [0, 0, 9, 9], 0),
            ("a", [30, 30, 39, 39], 0),
            ("b", [50, 50, 59, 59], 1),
            ("b", [60, 60, 69, 69], 0),
        ],
        ["a", "b"],
    )
    lists = voc_lists(data.det_columns(), data.gt_columns(), reference="voc_eval", missed=True)
    assert lists.row.tolist() == [0, 1, -1, -1]
    assert lists.gt_row.tolist() == [0, -1, 1, 3]  # the difficult object is not missed
    assert lists.label.tolist() == [1, -1, 1, 1]
    assert lists.seq.tolist() == [1, 2, 3, 4]
    assert lists.score[2:].tolist() == [-math.inf, -math.inf]
    assert int((lists.label == 1).sum()) == lists.n_positives[0] == 3


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"det": {"score": [math.nan]}}, "detections: row 0: score is nan"),
        ({"det": {"x2": [-1.0]}}, "detections: row 0: the box"),
        ({"gt": {"difficult": [2]}}, "'difficult' must hold 0/1"),
        ({"det": {"image_id": ["zz"]}}, 'detections: row 0: unrecognized image "zz"'),
        ({"images": ["a", "a"]}, "listed twice"),
        ({"reference": "voc"}, "unknown reference"),
        ({"ties": "mergesort"}, "unknown ties"),
    ],
)
def test_bad_input_is_refused_in_one_line(change: dict[str, Any], message: str) -> None:
    det = {
        "image_id": ["a"],
        "class": ["cat"],
        "score": [0.5],
        "x1": [0.0],
        "y1": [0.0],
        "x2": [9.0],
        "y2": [9.0],
    }
    gt = {
        "image_id": ["a"],
        "class": ["cat"],
        "x1": [0],
        "y1": [0],
        "x2": [9],
        "y2": [9],
        "difficult": [0],
    }
    det.update(change.get("det", {}))
    gt.update(change.get("gt", {}))
    kw = {
        "reference": change.get("reference", "voc_eval"),
        "ties": change.get("ties"),
        "images": change.get("images", ["a"]),
    }
    with pytest.raises(InvalidInput, match=message.replace("(", r"\(")) as err:
        voc_lists(det, gt, **kw)
    assert "\n" not in str(err.value)
    with pytest.raises(InvalidInput, match="unknown AP formula"):
        voc_ap_of_lists(
            voc_lists(
                det | {"score": [0.5], "x2": [9.0], "image_id": ["a"]},
                gt | {"difficult": [0]},
                reference="voc_eval",
            ),
            formula="voc12",
        )


# ---------------------------------------------------------------- the bridge to the twins

#: evalstore's ranked-list twin of each reference formula (evalstore/metrics/registry.py:
#: ap_voc07 -> ap_voc07_of_points, ap_voc07_numpy -> ap_voc07_numpy_of_points, ap_voc10 ->
#: ap_voc10_of_points)
TWIN = {
    "vocevaldet_07": ap_voc07_of_points,
    "voc_ap_07": ap_voc07_numpy_of_points,
    "voc_ap": ap_voc10_of_points,
    "vocap": ap_voc10_of_points,
}


def twin_values(lists: VocLists, formula: str, override: bool) -> np.ndarray:
    """The twin's AP per class, from the lists with ties in ``seq`` order (``ties="input"``)."""
    present = np.unique(lists.group)
    pts = ranking_points(
        lists.group,
        lists.score,
        lists.label,
        n_positives=lists.n_positives[present] if override else None,
        ties="input",
        order=lists.seq,
    )
    out = np.full(lists.classes.size, math.nan)
    out[present] = TWIN[formula](pts, None)
    return out


def bridge_departure(
    labels: np.ndarray, npos: int, formula: str, eps_precision: bool
) -> float | None:
    """The reference's AP where the twin's differs, else None. The twins drop 0 rows (a
    difficult object's detection) and give NaN without positives; the references keep a 0 row
    as a repeated (rec, prec) point, ``prec = 0/0 = NaN`` ahead of any tp or fp, and:

    - ``npos == 0``: rec = 0/0 = NaN is never ``>= t``: 0 from the 11-point formulas;
      ``voc_ap``/``VOCap.m`` sum a NaN step: NaN, or 0 with no detection at all;
    - ``voc_ap_07`` (45e0da9a) with a 0 row ahead of every tp and fp: ``np.max`` of a NaN: NaN;
    - ``vocevaldet_07`` with only 0 rows: MATLAB's ``max`` of all-NaN: NaN (the twin: 0).
    """
    if npos == 0:
        if formula in ("voc_ap_07", "vocevaldet_07") or labels.size == 0:
            return 0.0
        return math.nan
    nonzero = np.flatnonzero(labels != 0)
    leading = labels.size > 0 and (nonzero.size == 0 or nonzero[0] > 0)
    if formula == "voc_ap_07" and leading and not eps_precision:
        return math.nan
    if formula == "vocevaldet_07" and labels.size > 0 and nonzero.size == 0:
        return math.nan
    return None


def check_bridge(data: VocSet, counts: dict[str, int]) -> None:
    for reference in ("voc_eval", "vocevaldet"):
        for missed in (False, True):
            lists = voc_lists(
                data.det_columns(),
                data.gt_columns(),
                reference=reference,
                images=data.images,
                missed=missed,
            )
            for formula, eps in (*((f, False) for f in TWIN), ("voc_ap_07", True)):
                refs = voc_ap_of_lists(lists, formula=formula, eps_precision=eps)
                twins = twin_values(lists, formula, override=not missed)
                for g in range(lists.classes.size):
                    rows = class_rows(lists, g)
                    labels = lists.label[rows][lists.row[rows] >= 0]
                    departure = bridge_departure(labels, int(lists.n_positives[g]), formula, eps)
                    if not missed and labels.size == 0:  # no row: no list for the twins
                        assert refs[g] == 0
                        counts["no list"] = counts.get("no list", 0) + 1
                    elif departure is None:
                        assert close(twins[g], refs[g]), (formula, g, twins[g], refs[g])
                        counts["equal"] += 1
                        counts["bitwise"] += int(same(twins[g], refs[g]))
                    else:
                        assert same(refs[g], departure), (formula, g, refs[g], departure)
                        assert (
                            math.isnan(twins[g]) or twins[g] != departure or math.isnan(departure)
                        )
                        counts[f"departs: {formula}{' eps' if eps else ''}"] = (
                            counts.get(f"departs: {formula}{' eps' if eps else ''}", 0) + 1
                        )


@pytest.mark.parametrize("seed", range(4))
def test_lists_through_the_twins_give_the_references_ap(seed: int) -> None:
    counts = {"equal": 0, "bitwise": 0}
    check_bridge(synthetic(200 + seed), counts)
    assert counts["equal"] > 20


@pytest.mark.slow
def test_bridge_random_sweep() -> None:
    counts = {"equal": 0, "bitwise": 0}
    for seed in range(300, 360):
        check_bridge(
            synthetic(seed, n_images=int(np.random.default_rng(seed).integers(1, 60))), counts
        )
    assert counts["equal"] > 1000
    assert {k for k in counts if k.startswith("departs")} >= {
        "departs: voc_ap_07",
        "departs: vocevaldet_07",
        "departs: voc_ap",
    }
