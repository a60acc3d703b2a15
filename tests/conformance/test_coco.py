"""Protocol ``coco`` (pycocotools ``COCOeval.accumulate`` / ``summarize``: 101-point AP over
the precision envelope) against its transcription (reference_coco.py). pycocotools divides
by ``fp + tp + np.spacing(1)``; evalstore by ``tp + fp`` (docs/metrics.md): a relative change
near 1e-16, inside the 1e-12 compared here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.conformance import reference_coco as ref
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


def test_rec_thrs_are_k_hundredths() -> None:
    # np.linspace(0, 1, 101) equals k * 0.01 value by value (evalstore's grid), where
    # np.arange(0, 1.01, 0.01) does not
    assert ref.REC_THRS.tolist() == [k * 0.01 for k in range(101)]


def test_hand_worked(tmp_path: Path) -> None:
    # scores [3, 2, 1], labels [+1, -1, +1]: rc = [1/2, 1/2, 1], pr = [1, 1/2, 2/3];
    # envelope [1, 2/3, 2/3]. searchsorted(rc, t, 'left'): t = 0 .. 0.5 (51 thresholds) -> index
    # 0 (pr 1); t = 0.51 .. 1 (50) -> index 2 (2/3): AP = (51 + 50 * 2/3) / 101 = 0.83498...
    lst = one([3, 2, 1], [1, -1, 1])
    expected = (51 + 50 * 2 / 3) / 101
    assert ref.category_ap(lst.scores, lst.labels) == pytest.approx(expected, rel=1e-12)
    with open_store(tmp_path) as store:
        ingest(store, "r", "retrieval", [lst])
        got = values(store, "r", "coco").per_list("ap_coco")["0"]
    assert got == pytest.approx(expected, rel=1e-12)


COCO_CASES = [
    (1, {"distinct": 2}),
    (2, {"distinct": 3, "p_ignored": 0.2}),
    (3, {"distinct": 4, "p_unretrieved": 0.3}),
    (4, {"distinct": 3, "p_ignored": 0.3, "p_unretrieved": 0.3, "max_size": 4}),
    (5, {"distinct": None, "p_ignored": 0.1, "p_unretrieved": 0.1}),
]


def test_generated_lists(tmp_path: Path) -> None:
    """Ties (mergesort: input order), ignored detections (dtIg), ground truths without a
    detection (label +1 at -inf); per list and summarize's mean over categories."""
    lists = mixed_lists(COCO_CASES, 60)
    with open_store(tmp_path) as store:
        ingest(store, "r", "retrieval", lists)
        got = values(store, "r", "coco")
    precisions = [ref.accumulate_category(lst.scores, lst.labels) for lst in lists]
    expected = {lst.group: ref.category_ap(lst.scores, lst.labels) for lst in lists}
    assert_lists(got.per_list("ap_coco"), expected, "coco ap", lists)
    assert close(got.mean("map_coco"), ref.summarize_ap(precisions))


def test_sizes_1_to_2000(tmp_path: Path) -> None:
    lists = random_lists(6, len(SIZES), sizes=SIZES, distinct=6, p_ignored=0.1, p_unretrieved=0.1)
    with open_store(tmp_path) as store:
        ingest(store, "r", "classification", lists)
        got = values(store, "r", "coco")
    expected = {lst.group: ref.category_ap(lst.scores, lst.labels) for lst in lists}
    assert_lists(got.per_list("ap_coco"), expected, "coco ap", lists)


def test_categories_without_ground_truth_or_detections(tmp_path: Path) -> None:
    """npig == 0: accumulate `continue`s, the category keeps precision -1 and summarize leaves
    it out (s > -1) -- as evalstore leaves out a list without positives. A category with
    ground truth but no detection (nd = 0): q stays zeros (the IndexError is swallowed) and
    counts 0."""
    no_gt = one([2, 1], [-1, 0], "a")
    no_dt = one([-np.inf, -np.inf], [1, -1], "b")
    plain = one([2, 1], [-1, 1], "c")
    lists = [no_gt, no_dt, plain]
    precisions = [ref.accumulate_category(lst.scores, lst.labels) for lst in lists]
    assert precisions[0] is None and precisions[1].tolist() == [0.0] * 101
    with open_store(tmp_path) as store:
        ingest(store, "r", "retrieval", lists)
        got = values(store, "r", "coco")
    assert got.per_list("ap_coco") == {"a": None, "b": 0.0, "c": pytest.approx(0.5, rel=1e-12)}
    assert close(got.mean("map_coco"), ref.summarize_ap(precisions))
    assert got.counts[("map_coco", None)] == (2, 1)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20, 30))
def test_generated_lists_many(tmp_path: Path, seed: int) -> None:
    lists = random_lists(seed, 200, distinct=int(seed % 5) + 1, p_ignored=0.1, p_unretrieved=0.1)
    with open_store(tmp_path) as store:
        ingest(store, "r", "retrieval", lists)
        got = values(store, "r", "coco")
    expected = {lst.group: ref.category_ap(lst.scores, lst.labels) for lst in lists}
    assert_lists(got.per_list("ap_coco"), expected, "coco ap", lists)
