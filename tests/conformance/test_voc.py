"""Protocols ``voc07`` (the VOC2007 devkit's VOCevalcls.m), ``voc07-numpy`` and ``voc10``
(py-faster-rcnn's voc_ap, both branches) against transcriptions (reference_voc.py), on
devkit files ingested with ``--format voc`` (ground-truth order, images without a result
ranked last at -Inf) and on lists ingested directly."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from tests.conformance import reference_voc as ref
from tests.conformance.harness import (
    SIZES,
    assert_lists,
    close,
    ingest,
    mixed_lists,
    one,
    open_store,
    random_lists,
    values,
)
from tests.definitions import matlab_colon

PROTOCOLS = {"voc07": "ap_voc07", "voc07-numpy": "ap_voc07_numpy", "voc10": "ap_voc10"}
MEANS = {"voc07": "map_voc07", "voc07-numpy": "map_voc07_numpy", "voc10": "map_voc10"}


class VocClass:
    """One class of a devkit test set: ``<cls>_test.txt`` (ground truth, in its order) and
    ``comp1_cls_test_<cls>.txt`` (results, in any order, any subset)."""

    def __init__(
        self,
        name: str,
        gtids: Sequence[str],
        gt: Sequence[int],
        results: Sequence[tuple[str, float]],
    ) -> None:
        self.name, self.gtids, self.gt, self.results = name, list(gtids), list(gt), list(results)

    def reference(self) -> dict[str, float]:
        ids = [i for i, _ in self.results]
        confidence = [c for _, c in self.results]
        return ref.devkit_class(self.gtids, self.gt, ids, confidence)

    def write(self, folder: Path) -> Path:
        gt_dir = folder / "ImageSets" / "Main"
        gt_dir.mkdir(parents=True, exist_ok=True)
        (gt_dir / f"{self.name}_test.txt").write_text(
            "".join(f"{i} {g:2d}\n" for i, g in zip(self.gtids, self.gt, strict=True))
        )
        path = folder / f"comp1_cls_test_{self.name}.txt"
        path.write_text("".join(f"{i} {_text(c)}\n" for i, c in self.results))
        return path


def _text(c: float) -> str:
    """A confidence as the devkit's textread('%f') reads it back exactly."""
    return "-Inf" if c == -math.inf else repr(c)


def evaluate_files(tmp_path: Path, classes: Sequence[VocClass]) -> dict[str, object]:
    paths = [c.write(tmp_path) for c in classes]
    with open_store(tmp_path) as store:
        store.ingest(
            paths,
            fmt="voc",
            voc_gt=tmp_path / "ImageSets" / "Main",
            task="classification",
            run="voc",
            git_commit=None,
        )
        return {p: values(store, "voc", p) for p in PROTOCOLS}


# ------------------------------------------------------------------------- the two grids


def test_matlab_colon_holds_exactly_06_and_07() -> None:
    # 0:0.1:1 has n = 10 steps: 0, 0.1, ..., 0.5 are k * 0.1 (0.30000000000000004 among
    # them); 0.6 .. 1 are 1 - (10 - k) * 0.1, i.e. 1 - 0.4 = 0.6 and 1 - 0.30000000000000004
    # = 0.7 exactly; np.arange gives 6 * 0.1 = 0.6000000000000001 and 0.7000000000000001.
    grid = ref.colon(0.0, 0.1, 1.0)
    assert grid == matlab_colon(0.0, 0.1, 1.0)
    assert grid[3] == 0.30000000000000004 and grid[6] == 0.6 and grid[7] == 0.7
    numpy = np.arange(0.0, 1.1, 0.1).tolist()
    assert [i for i in range(11) if grid[i] != numpy[i]] == [6, 7]
    assert numpy[6] == 0.6000000000000001 and numpy[7] == 0.7000000000000001


# -------------------------------------------------------------------- hand-worked: recall 0.6


def test_recall_exactly_06_devkit_and_numpy_differ(tmp_path: Path) -> None:
    # 5 positives a..e, 3 negatives f..h. Results: a .9, b .8, c .7, f .6, g .5, h .4; d and e
    # have none: -Inf, ranked last in ground-truth order. Ranking a b c f g h d e:
    #   rec  .2  .4  .6  .6  .6  .6  .8  1
    #   prec  1   1   1 3/4 3/5 1/2 4/7 5/8
    # devkit 0:0.1:1: t = 0 .. 0.6 (7 points) reach prec 1 (rec 3/5 = 0.6 >= 0.6); t = 0.7 ..
    #   1 (4 points): max(4/7, 5/8) = 5/8 -> (7 + 4 * 5/8) / 11 = 9.5 / 11
    # py-faster-rcnn np.arange: 0.6000000000000001 > 3/5, so only t = 0 .. 0.5 (6 points) reach
    #   1; the 5 others 5/8 -> (6 + 5 * 5/8) / 11 = 9.125 / 11
    # voc10: envelope 1 up to rec 0.6, then 5/8: 0.6 * 1 + 0.4 * 5/8 = 0.85
    cls = VocClass(
        "cat",
        list("abcdefgh"),
        [1, 1, 1, 1, 1, -1, -1, -1],
        [("a", 0.9), ("b", 0.8), ("c", 0.7), ("f", 0.6), ("g", 0.5), ("h", 0.4)],
    )
    expected = {"voc07": 9.5 / 11, "voc07-numpy": 9.125 / 11, "voc10": 0.85}
    assert cls.reference() == pytest.approx(expected, rel=1e-15)
    got = evaluate_files(tmp_path, [cls])
    for protocol, metric in PROTOCOLS.items():
        assert got[protocol].per_list(metric)["cat"] == pytest.approx(expected[protocol], rel=1e-15)


def test_recall_exactly_07_devkit_and_numpy_differ(tmp_path: Path) -> None:
    # 10 positives p0..p9, one negative n. Results p0 .. p6 (confidences 0.9 .. 0.3), n 0.2;
    # p7 p8 p9 have none (ranked last, in ground-truth order).
    #   rec  .1 .. .7 (prec 1), then n: .7 (7/8), p7: .8 (8/9), p8: .9 (9/10), p9: 1 (10/11)
    # devkit: t = 0 .. 0.7 (8 points) -> 1 (rec 7/10 = 0.7 >= 0.7); t = .8 .9 1 -> 10/11
    #   (the largest of 8/9, 9/10, 10/11): (8 + 30/11) / 11 = 118/121
    # numpy: 0.7000000000000001 > 7/10, so t = 0 .. 0.6 (7 points) -> 1, 4 points -> 10/11:
    #   (7 + 40/11) / 11 = 117/121
    gtids = [f"p{i}" for i in range(10)] + ["n"]
    results = [(f"p{i}", 0.9 - i / 10) for i in range(7)] + [("n", 0.2)]
    cls = VocClass("dog", gtids, [1] * 10 + [-1], results)
    got = evaluate_files(tmp_path, [cls])
    expected = cls.reference()
    assert expected["voc07"] == pytest.approx(118 / 121, rel=1e-15)
    assert expected["voc07-numpy"] == pytest.approx(117 / 121, rel=1e-15)
    for protocol, metric in PROTOCOLS.items():
        assert close(got[protocol].per_list(metric)["dog"], expected[protocol])
    assert (
        got["voc07"].per_list("ap_voc07")["dog"]
        != got["voc07-numpy"].per_list("ap_voc07_numpy")["dog"]
    )


def test_recall_06_with_the_rest_not_retrieved(tmp_path: Path) -> None:
    # ingested directly: 3 of 5 positives retrieved first (scores 3, 2, 1), the 2 others at
    # -inf (not retrieved: no rank, but counted in P). rec .2 .4 .6 with prec 1; no point
    # beyond recall 0.6. Devkit grid: t = 0 .. 0.6 -> 1 (7 points), t = 0.7 .. 1 -> 0: 7/11.
    # numpy grid: 0.6000000000000001 is not reached: 6/11. voc10: 0.6 * 1 = 0.6.
    lst = one([3, 2, 1, -np.inf, -np.inf], [1, 1, 1, 1, 1], "cls")
    expected = ref.detections(lst.scores, lst.labels)
    assert expected == pytest.approx({"voc07": 7 / 11, "voc07-numpy": 6 / 11, "voc10": 0.6})
    with open_store(tmp_path) as store:
        ingest(store, "r", "classification", [lst])
        for protocol, metric in PROTOCOLS.items():
            got = values(store, "r", protocol).per_list(metric)["cls"]
            assert close(got, expected[protocol]), protocol


# ------------------------------------------------------------------------ generated classes


def random_classes(seed: int, n_classes: int, sizes: Sequence[int] | None = None) -> list[VocClass]:
    """Classes with few distinct confidences (ties), difficult images, images without a
    result (missing, or a confidence of -Inf), results in shuffled order."""
    rng = np.random.default_rng(seed)
    out = []
    for c in range(n_classes):
        n = int(sizes[c % len(sizes)]) if sizes else int(rng.integers(1, 40))
        gtids = [f"{c:02d}{i:05d}" for i in rng.permutation(n)]
        u = rng.random(n)
        gt = np.where(u < 0.35, 1, np.where(u < 0.5, 0, -1))
        if not (gt == 1).any():
            gt[rng.integers(0, n)] = 1
        levels = int(rng.integers(1, 6))
        results = []
        for i in rng.permutation(n):
            r = rng.random()
            if r < 0.15:
                continue  # no result: -Inf in the devkit
            conf = -math.inf if r < 0.2 else float(rng.integers(0, levels)) / 4 - 0.5
            results.append((gtids[i], conf))
        if not results:  # an empty results file: see test_empty_results_file
            results.append((gtids[0], 0.0))
        out.append(VocClass(f"c{c:03d}", gtids, gt.tolist(), results))
    return out


def _difficult_first(cls: VocClass) -> bool:
    """Whether a difficult image ranks above every other image of the class (the devkit's
    ranking): then prec(1) = 0/0 = NaN."""
    ids = [i for i, _ in cls.results]
    _rec, prec = ref.rec_prec(cls.gtids, cls.gt, ids, [c for _, c in cls.results])
    return bool(np.isnan(prec[0]))


def _check_classes(tmp_path: Path, classes: Sequence[VocClass]) -> None:
    got = evaluate_files(tmp_path, classes)
    expected = {c.name: c.reference() for c in classes}
    for protocol, metric in PROTOCOLS.items():
        per_class = {name: e[protocol] for name, e in expected.items()}
        if protocol == "voc07-numpy":
            # py-faster-rcnn's np.max propagates the NaN of prec(1) = 0/0 when a difficult
            # image ranks first (see the xfail below); elsewhere it must agree
            nan = {name for name, v in per_class.items() if math.isnan(v)}
            assert nan == {c.name for c in classes if _difficult_first(c)}
            per_class = {n: v for n, v in per_class.items() if n not in nan}
            got_lists = {n: v for n, v in got[protocol].per_list(metric).items() if n not in nan}
        else:
            got_lists = got[protocol].per_list(metric)
        assert_lists(got_lists, per_class, protocol)
        if protocol != "voc07-numpy":
            mean = float(np.mean(list(per_class.values())))
            assert close(got[protocol].mean(MEANS[protocol]), mean)


def test_generated_devkit_files(tmp_path: Path) -> None:
    _check_classes(tmp_path, random_classes(1, 80))


def test_generated_devkit_files_sizes_1_to_2000(tmp_path: Path) -> None:
    _check_classes(tmp_path, random_classes(4, len(SIZES), SIZES))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(10, 20))
def test_generated_devkit_files_many(tmp_path: Path, seed: int) -> None:
    _check_classes(tmp_path, random_classes(seed, 60))


def test_generated_lists_as_detections(tmp_path: Path) -> None:
    """Lists ingested directly (task classification), with ties, ignored items and items not
    retrieved (-inf), against the detection reading (reference_voc.detections): VOCevaldet.m's
    vectors for voc07, py-faster-rcnn's voc_ap over the same vectors for the other two."""
    lists = mixed_lists(
        [
            (1, {"distinct": 2}),
            (2, {"distinct": 3, "p_ignored": 0.2, "p_unretrieved": 0.2}),
            (3, {"distinct": 5, "p_unretrieved": 0.4}),
            (4, {"distinct": None, "p_ignored": 0.1, "p_unretrieved": 0.1}),
        ],
        50,
    ) + random_lists(5, len(SIZES), sizes=SIZES, distinct=6, p_unretrieved=0.1, prefix="n")
    with open_store(tmp_path) as store:
        ingest(store, "r", "classification", lists)
        got = {p: values(store, "r", p).per_list(m) for p, m in PROTOCOLS.items()}
    expected = {lst.group: ref.detections(lst.scores, lst.labels) for lst in lists}
    for protocol in PROTOCOLS:
        want = {g: e[protocol] for g, e in expected.items()}
        if protocol == "voc07-numpy":  # the NaN of a difficult item ranked first: see below
            want = {g: v for g, v in want.items() if not math.isnan(v)}
        assert_lists({g: got[protocol][g] for g in want}, want, protocol, lists)


# ---------------------------------------------------------------------------- disagreements


def test_difficult_image_ranked_first_voc07_numpy(tmp_path: Path) -> None:
    # ranking x (difficult) y (+) z (-): tp = [0 1 1], fp = [0 0 1], rec = [0 1 1],
    # prec = [0/0, 1, 1/2]. Devkit: max ignores the NaN -> 1 at every t -> 1.0.
    # numpy: t = 0 selects the NaN -> NaN.
    cls = VocClass("d", ["x", "y", "z"], [0, 1, -1], [("x", 0.9), ("y", 0.8), ("z", 0.7)])
    expected = cls.reference()
    assert expected["voc07"] == pytest.approx(1.0, rel=1e-15) and expected["voc10"] == 1.0
    assert math.isnan(expected["voc07-numpy"])
    got = evaluate_files(tmp_path, [cls])
    assert close(got["voc07"].per_list("ap_voc07")["d"], expected["voc07"])
    # the one deliberate difference (docs/protocols.md): py-faster-rcnn's NaN, a 0/0 of its
    # own, would make the mean over classes NaN; evalstore keeps the devkit's value
    assert got["voc07-numpy"].per_list("ap_voc07_numpy")["d"] == 1.0


def test_empty_results_file(tmp_path: Path) -> None:
    # ground truth a -1, b +1; no results: out = [-Inf -Inf], sort(-out) keeps a, b:
    # rec [0 1], prec [0 1/2] -> every t reaches 1/2 -> voc07 = 0.5; voc10 = 1 * 1/2 = 0.5
    cls = VocClass("empty", ["a", "b"], [-1, 1], [])
    assert cls.reference() == pytest.approx({"voc07": 0.5, "voc07-numpy": 0.5, "voc10": 0.5})
    got = evaluate_files(tmp_path, [cls])
    assert close(got["voc07"].per_list("ap_voc07")["empty"], cls.reference()["voc07"])


def test_classes_without_positives(tmp_path: Path) -> None:
    """A class without positives (every image -1 or difficult): the devkit's rec = tp/0 is
    NaN, rec >= t never holds, so its AP is 0 (a number); py-faster-rcnn's 07 branch likewise
    0 (np.sum(rec >= t) == 0), its 2010 branch NaN (the NaN recalls reach the sum). evalstore
    gives no value and leaves the class out of the mean (n_skipped). A documented difference
    (every VOC class has positives), pinned here."""
    none = VocClass("none", ["a", "b", "c"], [-1, 0, -1], [("a", 0.5), ("b", 0.4)])
    some = VocClass("some", ["a", "b"], [1, -1], [("a", 0.1), ("b", 0.2)])
    assert none.reference()["voc07"] == 0.0 and none.reference()["voc07-numpy"] == 0.0
    assert math.isnan(none.reference()["voc10"])
    got = evaluate_files(tmp_path, [none, some])
    for protocol, metric in PROTOCOLS.items():
        assert got[protocol].per_list(metric)["none"] is None
        assert close(got[protocol].mean(MEANS[protocol]), some.reference()[protocol])
        assert got[protocol].counts[(MEANS[protocol], None)] == (1, 1)
