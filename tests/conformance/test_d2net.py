"""Protocol ``d2net`` (D2-Net's HPatches-sequences MMA) against the transcription of its
notebook's loop (reference_d2net.py): matches ingested with each pair's homography H_1_k
(evalstore derives the truth x1 ~ H x0 at ingest, the notebook projects pos_a by H), MMA at
1..10 px (and 11..15, which the notebook computes), overall and per kind of sequence."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tests.conformance import reference_d2net as ref
from tests.conformance.harness import Values, close, open_store, values

H_COLUMNS = [f"h{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3)]


def _ingest_and_evaluate(
    tmp_path: Path, pairs: Sequence[ref.Pair], thresholds: Sequence[float] | None = None
) -> Values:
    ids = [f"{p.seq_name}/{p.im_idx}" for p in pairs]
    pos_a = [p.pos_a.reshape(-1, 2) for p in pairs]
    pos_b = [p.pos_b.reshape(-1, 2) for p in pairs]
    matches = {
        "pair_id": [pid for pid, a in zip(ids, pos_a, strict=True) for _ in range(len(a))],
        "x0": np.concatenate([a[:, 0] for a in pos_a]),
        "y0": np.concatenate([a[:, 1] for a in pos_a]),
        "x1": np.concatenate([b[:, 0] for b in pos_b]),
        "y1": np.concatenate([b[:, 1] for b in pos_b]),
    }
    table = pl.DataFrame(
        {
            "pair_id": ids,
            **{
                c: [float(p.homography.reshape(9)[i]) for p in pairs]
                for i, c in enumerate(H_COLUMNS)
            },
            "kind": [p.seq_name[0] for p in pairs],  # the notebook's seq_name[0]: 'i' or 'v'
        }
    )
    with open_store(tmp_path) as store:
        store.ingest_keypoints(matches, run="k", pairs=table, git_commit=None)
        sweeps = None if thresholds is None else {"threshold": list(thresholds)}
        return values(store, "k", "d2net", sweeps=sweeps, by=("kind",))


def _check(tmp_path: Path, pairs: Sequence[ref.Pair], thresholds: Sequence[int]) -> None:
    got = _ingest_and_evaluate(tmp_path, pairs, thresholds)
    expected = ref.mma(pairs)
    for t in thresholds:
        assert close(got.mean("mma", float(t)), expected["overall"][t]), t
        for kind in ("i", "v"):
            if expected[kind]:
                slice_value = got.slices[(f"kind={kind}", "mma", float(t))]
                assert close(slice_value, expected[kind][t]), (kind, t)


def random_sequences(seed: int, n_seq: int, *, max_matches: int = 60) -> list[ref.Pair]:
    """Sequences ``i_*`` and ``v_*`` of 5 pairs (images 2..6) each: a random homography near
    the identity, matched keypoints of image 1 and their image-k positions off the true
    projection by 0..12 px; some pairs without matches."""
    rng = np.random.default_rng(seed)
    pairs = []
    for s in range(n_seq):
        seq_name = f"{'iv'[s % 2]}_{s:03d}"
        for im_idx in range(2, 7):
            h = np.eye(3) + rng.normal(0, [[0.05, 0.05, 5], [0.05, 0.05, 5], [1e-4, 1e-4, 0]])
            n = 0 if rng.random() < 0.1 else int(rng.integers(1, max_matches))
            pos_a = rng.uniform(0, 640, size=(n, 2))
            proj = np.c_[pos_a, np.ones(n)] @ h.T
            truth = proj[:, :2] / proj[:, 2:]
            angle = rng.uniform(0, 2 * np.pi, n)
            radius = rng.uniform(0, 12, n)
            pos_b = truth + np.c_[radius * np.cos(angle), radius * np.sin(angle)]
            pairs.append(ref.Pair(seq_name, im_idx, pos_a, pos_b, h))
    return pairs


def test_hand_worked_inclusive_threshold_and_empty_pair(tmp_path: Path) -> None:
    # one illumination sequence: pair 2 moves by an integer translation (exact arithmetic);
    # its 4 matches lie 0, 1, 3 and 5 px (3-4-5) from the truth: d <= t counts 2, 2, 3, 3, 4
    # of 4 at t = 1 .. 5 (the match exactly 1 px off counts at t = 1, the one 3 px off at
    # t = 3). Pairs 3..6 have no match: the notebook's dist = [inf] scores 0. So MMA@t =
    # (count / 4 + 0 * 4) / 5: 0.1, 0.1, 0.15, 0.15, 0.2.
    shift = np.array([[1.0, 0, 10], [0, 1, -4], [0, 0, 1]])
    pos_a = np.array([[100.0, 100], [200, 50], [300, 300], [20, 40]])
    offsets = np.array([[0.0, 0], [1, 0], [0, -3], [3, 4]])
    pos_b = pos_a + np.array([10.0, -4.0]) + offsets
    pairs = [ref.Pair("i_hand", 2, pos_a, pos_b, shift)]
    pairs += [
        ref.Pair("i_hand", k, np.zeros((0, 2)), np.zeros((0, 2)), shift) for k in (3, 4, 5, 6)
    ]
    expected = ref.mma(pairs)["overall"]
    assert [expected[t] for t in (1, 2, 3, 4, 5)] == [0.1, 0.1, 0.15, 0.15, 0.2]
    got = _ingest_and_evaluate(tmp_path, pairs)
    assert [got.mean("mma", float(t)) for t in (1, 2, 3, 4, 5)] == pytest.approx(
        [0.1, 0.1, 0.15, 0.15, 0.2], rel=1e-15
    )
    per_pair = got.per_list("mma", 3.0)
    assert per_pair == {"i_hand/2": 0.75, **{f"i_hand/{k}": 0.0 for k in (3, 4, 5, 6)}}


def test_integer_distances_on_the_thresholds(tmp_path: Path) -> None:
    """Matches exactly t px from the truth (integer translations, 3-4-5 and axis offsets:
    exact in floating point) count at t, as the notebook's dist <= thr."""
    rng = np.random.default_rng(3)
    pairs = []
    for s in range(4):
        for im_idx in range(2, 7):
            t = rng.integers(-20, 20, size=2).astype(float)
            h = np.array([[1.0, 0, t[0]], [0, 1, t[1]], [0, 0, 1]])
            n = 30
            pos_a = rng.integers(0, 500, size=(n, 2)).astype(float)
            d = rng.integers(0, 12, size=n).astype(float)
            k = rng.integers(0, 3, size=n).astype(float)  # 3-4-5 triangles: 5k px
            offsets = np.choose(
                rng.integers(0, 3, size=n)[:, None],
                [np.c_[d, 0 * d], np.c_[0 * d, -d], np.c_[3 * k, 4 * k]],
            )
            pairs.append(ref.Pair(f"{'iv'[s % 2]}_{s}", im_idx, pos_a, pos_a + t + offsets, h))
    _check(tmp_path, pairs, list(range(1, 16)))


def test_generated_sequences(tmp_path: Path) -> None:
    """Thresholds 1..15: the notebook computes rng = 1..15 and plots 1..10; evalstore's
    default sweep is 1..10, --threshold (sweeps) gives the rest."""
    _check(tmp_path, random_sequences(1, 6, max_matches=30), list(range(1, 16)))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(10, 12))
def test_generated_sequences_many(tmp_path: Path, seed: int) -> None:
    _check(tmp_path, random_sequences(seed, 12, max_matches=400), list(range(1, 16)))
