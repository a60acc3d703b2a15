"""The HPatches-style demo data: real photographs, real OpenCV descriptors, reduced sizes."""

from __future__ import annotations

from functools import cache

import cv2
import numpy as np
import pytest

from evalstore.core import geometry, ranking
from evalstore.demo.descriptors import DESCRIPTORS, available_descriptors
from evalstore.demo.matches import keypoint_matches
from evalstore.demo.patches import NOISE_LEVELS
from evalstore.demo.sequences import Sequence, make_sequences
from evalstore.demo.tasks import hpatches_tasks
from evalstore.errors import InvalidInput

pytestmark = pytest.mark.slow  # builds HPatches-style sequences and OpenCV descriptors

N_SEQUENCES, SIZE, N_PATCHES, N_QUERIES, MAX_KEYPOINTS = 4, 160, 30, 12, 200
AVAILABLE = available_descriptors()
TASKS = ("verification", "matching", "retrieval")
LABELS = {"verification": {-1, 1}, "matching": {-1, 1}, "retrieval": {-1, 0, 1}}


@cache
def sequences() -> tuple[Sequence, ...]:
    return tuple(make_sequences(N_SEQUENCES, seed=0, size=SIZE))


@cache
def tasks(descriptor: str) -> dict[str, dict[str, np.ndarray]]:
    return hpatches_tasks(sequences(), descriptor, N_PATCHES, 0, n_queries=N_QUERIES)


@cache
def matches(descriptor: str) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    return keypoint_matches(sequences(), descriptor, max_keypoints=MAX_KEYPOINTS)


def descriptor_params() -> list[str]:
    """Every descriptor: opencv-contrib-python-headless is a core dependency, so a descriptor
    the installed OpenCV lacks fails its tests (naming the package) instead of skipping."""
    return list(DESCRIPTORS)


def mean_ap(task: dict[str, np.ndarray], groups: dict[str, np.ndarray] | None = None) -> float:
    """Mean AP over the lists, with integer codes for the group ids."""
    names, codes = np.unique(task["group_id"], return_inverse=True)
    n_positives = None
    if groups is not None:
        by_name = dict(zip(groups["group_id"], groups["n_positives"], strict=True))
        n_positives = np.array([by_name[n] for n in names], dtype=np.int64)
    _, values = ranking.per_list("ap", codes, task["score"], task["label"], n_positives=n_positives)
    return float(np.nanmean(values))


def keypoint_precision(descriptor: str, threshold: float = 3.0) -> float:
    """Mean over pairs of the fraction of matches within ``threshold`` px of H x0."""
    found, pairs = matches(descriptor)
    out = []
    for i, pair in enumerate(pairs["pair_id"]):
        h = np.array([[pairs[f"h{r}{c}"][i] for c in (1, 2, 3)] for r in (1, 2, 3)])
        sel = found["pair_id"] == pair
        if not sel.any():
            out.append(0.0)
            continue
        gx, gy = geometry.transfer(h, found["x0"][sel], found["y0"][sel])
        d = np.hypot(found["x1"][sel] - gx, found["y1"][sel] - gy)
        out.append(float(np.mean(d < threshold)))
    return float(np.mean(out))


# ------------------------------------------------------------------------------ sequences


def test_sequences_shapes_and_names() -> None:
    seqs = sequences()
    assert [s.name for s in seqs] == ["v_camera", "i_coffee", "v_astronaut", "i_chelsea"]
    for s in seqs:
        assert s.kind == ("viewpoint" if s.name.startswith("v_") else "illumination")
        assert s.ref.dtype == np.uint8 and s.ref.ndim == 2
        assert max(s.ref.shape) == SIZE
        assert len(s.targets) == len(s.homographies) == 5
        for t, h in zip(s.targets, s.homographies, strict=True):
            assert t.dtype == np.uint8 and t.shape == s.ref.shape
            assert h.shape == (3, 3) and h.dtype == np.float64
            assert np.isfinite(h).all() and abs(np.linalg.det(h)) > 1e-6
        if s.kind == "illumination":
            assert all(np.array_equal(h, np.eye(3)) for h in s.homographies)
            # photometric changes only, growing along the sequence
            diffs = [np.abs(t.astype(float) - s.ref).mean() for t in s.targets]
            assert diffs[-1] > diffs[0] > 0
        else:
            assert not any(np.allclose(h, np.eye(3)) for h in s.homographies)


def test_sequences_deterministic_and_seeded() -> None:
    again = make_sequences(N_SEQUENCES, seed=0, size=SIZE)
    for a, b in zip(sequences(), again, strict=True):
        assert a.name == b.name and a.kind == b.kind
        assert np.array_equal(a.ref, b.ref)
        assert all(np.array_equal(x, y) for x, y in zip(a.targets, b.targets, strict=True))
        assert all(
            np.array_equal(x, y) for x, y in zip(a.homographies, b.homographies, strict=True)
        )
    other = make_sequences(1, seed=1, size=SIZE)[0]
    assert not np.allclose(other.homographies[-1], sequences()[0].homographies[-1])


def test_more_sequences_keep_earlier_ones_and_names_stay_distinct() -> None:
    many = make_sequences(24, seed=0, size=96)
    names = [s.name for s in many]
    assert len(set(names)) == 24
    assert names[12] == "i_camera"  # the photographs come back with the other kind
    small = make_sequences(2, seed=0, size=96)
    assert np.array_equal(small[1].targets[3], many[1].targets[3])


def test_true_homography_maps_reference_onto_target() -> None:
    for s in sequences():
        if s.kind != "viewpoint":
            continue
        height, width = s.ref.shape
        for h, target in zip(s.homographies, s.targets, strict=True):
            # warping the reference by H gives the target wherever the reference is defined
            warped = cv2.warpPerspective(s.ref, h, (width, height), flags=cv2.INTER_LINEAR)
            yy, xx = np.mgrid[0:height, 0:width].astype(np.float64)
            bx, by = geometry.transfer(np.linalg.inv(h), xx, yy)
            inside = (bx > 1) & (bx < width - 2) & (by > 1) & (by < height - 2)
            assert inside.mean() > 0.3
            diff = np.abs(warped.astype(int) - target.astype(int))[inside]
            assert np.mean(diff) < 0.5 and np.percentile(diff, 99) <= 2
            # and point by point: the target at H x equals the reference at x
            rng = np.random.default_rng(0)
            x = rng.uniform(0, width - 1, 400)
            y = rng.uniform(0, height - 1, 400)
            tx, ty = geometry.transfer(h, x, y)
            ok = (tx > 1) & (tx < width - 2) & (ty > 1) & (ty < height - 2)
            at_ref = cv2.remap(
                s.ref.astype(np.float32),
                x[ok].astype(np.float32)[None],
                y[ok].astype(np.float32)[None],
                cv2.INTER_LINEAR,
            )
            at_target = cv2.remap(
                target.astype(np.float32),
                tx[ok].astype(np.float32)[None],
                ty[ok].astype(np.float32)[None],
                cv2.INTER_LINEAR,
            )
            shifted = cv2.remap(
                target.astype(np.float32),
                (tx[ok] + 4).astype(np.float32)[None],
                ty[ok].astype(np.float32)[None],
                cv2.INTER_LINEAR,
                borderMode=cv2.BORDER_REFLECT_101,
            )
            right = np.abs(at_ref - at_target).mean()
            wrong = np.abs(at_ref - shifted).mean()
            assert right < 4.0 and wrong > 3 * right


def test_make_sequences_refuses_bad_arguments() -> None:
    with pytest.raises(InvalidInput, match="n_sequences"):
        make_sequences(0)
    with pytest.raises(InvalidInput, match="n_sequences"):
        make_sequences(25)
    with pytest.raises(InvalidInput, match="size"):
        make_sequences(1, size=50)


# ------------------------------------------------------------------------------ HPatches tasks


@pytest.mark.parametrize("descriptor", descriptor_params())
def test_tasks_shapes_ids_and_labels(descriptor: str) -> None:
    out = tasks(descriptor)
    assert set(out) == {*TASKS, *(f"{t}_groups" for t in TASKS)}
    for name in TASKS:
        task = out[name]
        assert set(task) == {"group_id", "item_id", "score", "label"}
        n = task["label"].size
        assert n > 0 and all(a.ndim == 1 and a.size == n for a in task.values())
        assert task["score"].dtype == np.float64 and np.isfinite(task["score"]).all()
        assert (task["score"] <= 0).all()  # -distance
        assert task["label"].dtype == np.int8
        assert set(np.unique(task["label"]).tolist()) == LABELS[name]
        assert task["group_id"].dtype.kind == "U"
        assert task["item_id"].dtype.kind in "Ui"
        pairs = {(g, i) for g, i in zip(task["group_id"], task["item_id"], strict=True)}
        assert len(pairs) == n, f"{name}: (group_id, item_id) not unique"
        groups = out[f"{name}_groups"]
        assert len(set(groups["group_id"])) == groups["group_id"].size
        assert set(groups["group_id"]) == set(task["group_id"])
        assert all(a.shape == groups["group_id"].shape for a in groups.values())


@pytest.mark.parametrize("descriptor", descriptor_params())
def test_task_structure(descriptor: str) -> None:
    out = tasks(descriptor)
    names = {s.name: s.kind for s in sequences()}

    ver = out["verification"]
    assert set(ver["group_id"]) == {"inter", "intra"}
    for g in ("inter", "intra"):
        lab = ver["label"][ver["group_id"] == g]
        assert (lab == 1).sum() == (lab == -1).sum() == N_SEQUENCES * N_PATCHES
    pos = ver["group_id"] == "inter"
    same = ver["group_id"] == "intra"
    # the same positive pairs in both lists
    assert np.array_equal(
        ver["score"][pos & (ver["label"] == 1)], ver["score"][same & (ver["label"] == 1)]
    )

    mat, mg = out["matching"], out["matching_groups"]
    assert mg["group_id"].size == N_SEQUENCES * 5 * 3
    for i, gid in enumerate(mg["group_id"]):
        seq, k, noise = gid.split("/")
        assert (seq, k, noise) == (mg["sequence"][i], mg["target"][i], mg["noise"][i])
        assert mg["kind"][i] == names[seq] and noise in NOISE_LEVELS
        rows = mat["group_id"] == gid
        assert mg["n_positives"][i] == rows.sum() == N_PATCHES
        assert np.array_equal(np.sort(mat["item_id"][rows]), np.arange(N_PATCHES))

    ret, rg = out["retrieval"], out["retrieval_groups"]
    assert rg["group_id"].size == N_QUERIES
    assert set(rg["noise"]) == set(NOISE_LEVELS)
    for i, gid in enumerate(rg["group_id"]):
        seq = gid.split("/")[0]
        assert rg["sequence"][i] == seq and rg["kind"][i] == names[seq]
        rows = ret["group_id"] == gid
        labels, items = ret["label"][rows], ret["item_id"][rows]
        assert (labels == 1).sum() == 5  # every correspondent stays inside every target
        assert all(it.startswith(f"{seq}/") for it in items[labels >= 0])
        assert not any(it.startswith(f"{seq}/") for it in items[labels == -1])
        positives = sorted(items[labels == 1])
        assert positives == sorted(
            f"{gid.split('/')[0]}/{k}/{gid.split('/')[1]}" for k in range(1, 6)
        )


@pytest.mark.parametrize("descriptor", ["sift", "orb"])
def test_tasks_deterministic(descriptor: str) -> None:
    a = tasks(descriptor)
    b = hpatches_tasks(sequences(), descriptor, N_PATCHES, 0, n_queries=N_QUERIES)
    assert a.keys() == b.keys()
    for name in a:
        for col in a[name]:
            assert np.array_equal(a[name][col], b[name][col]), (name, col)
    c = hpatches_tasks(sequences(), descriptor, N_PATCHES, 1, n_queries=N_QUERIES)
    assert not np.array_equal(a["matching"]["score"], c["matching"]["score"])


def test_same_patches_for_every_descriptor() -> None:
    a, b = tasks("sift"), tasks("orb")
    for name in TASKS:
        assert np.array_equal(a[name]["group_id"], b[name]["group_id"])
        assert np.array_equal(a[name]["item_id"], b[name]["item_id"])
    assert np.array_equal(a["retrieval"]["label"], b["retrieval"]["label"])


def test_sift_beats_weak_sift_and_noise_hurts() -> None:
    sift, weak = tasks("sift"), tasks("sift_weak")
    m_sift = mean_ap(sift["matching"], sift["matching_groups"])
    m_weak = mean_ap(weak["matching"], weak["matching_groups"])
    assert m_sift > m_weak + 0.2
    assert mean_ap(sift["retrieval"]) > mean_ap(weak["retrieval"]) + 0.1
    assert mean_ap(sift["verification"]) > mean_ap(weak["verification"])
    # tougher jitter, lower matching AP
    mg = sift["matching_groups"]
    by_noise = []
    for noise in NOISE_LEVELS:
        keep = np.isin(sift["matching"]["group_id"], mg["group_id"][mg["noise"] == noise])
        sub = {k: v[keep] for k, v in sift["matching"].items()}
        by_noise.append(mean_ap(sub, {k: v[mg["noise"] == noise] for k, v in mg.items()}))
    assert by_noise[0] > by_noise[2]


def test_every_descriptor_is_available() -> None:
    assert AVAILABLE == DESCRIPTORS, "opencv-contrib-python-headless is a core dependency"


def test_hpatches_tasks_refuses_bad_arguments() -> None:
    with pytest.raises(InvalidInput, match="unknown descriptor"):
        hpatches_tasks(sequences(), "surf")
    with pytest.raises(InvalidInput, match="at least 2 sequences"):
        hpatches_tasks(sequences()[:1], "sift")
    for d in set(DESCRIPTORS) - set(AVAILABLE):
        with pytest.raises(InvalidInput, match="opencv-contrib"):
            hpatches_tasks(sequences(), d)


# ------------------------------------------------------------------------------ keypoint matches


@pytest.mark.parametrize("descriptor", descriptor_params())
def test_keypoint_matches_shapes(descriptor: str) -> None:
    found, pairs = matches(descriptor)
    assert set(found) == {"pair_id", "x0", "y0", "x1", "y1", "score"}
    n = found["pair_id"].size
    assert n > 0 and all(a.shape == (n,) for a in found.values())
    for c in ("x0", "y0", "x1", "y1", "score"):
        assert found[c].dtype == np.float64 and np.isfinite(found[c]).all()
    assert (found["score"] <= 0).all()
    expected = [f"{s.name}/{k}" for s in sequences() for k in range(1, 6)]
    assert pairs["pair_id"].tolist() == expected
    assert set(found["pair_id"]) <= set(expected)
    hcols = [f"h{r}{c}" for r in (1, 2, 3) for c in (1, 2, 3)]
    assert set(pairs) == {"pair_id", *hcols, "width", "height", "sequence", "kind", "target"}
    for i, s in enumerate(s for s in sequences() for _ in range(5)):
        h = np.array([pairs[c][i] for c in hcols]).reshape(3, 3)
        np.testing.assert_allclose(h, s.homographies[i % 5] / s.homographies[i % 5][2, 2])
        assert (pairs["width"][i], pairs["height"][i]) == (s.ref.shape[1], s.ref.shape[0])
        assert (pairs["sequence"][i], pairs["kind"][i]) == (s.name, s.kind)
        sel = found["pair_id"] == pairs["pair_id"][i]
        assert (found["x0"][sel] >= 0).all() and (found["x0"][sel] <= s.ref.shape[1]).all()
        assert (found["y1"][sel] >= 0).all() and (found["y1"][sel] <= s.ref.shape[0]).all()
    again = keypoint_matches(sequences(), descriptor, max_keypoints=MAX_KEYPOINTS)
    for c in found:
        assert np.array_equal(found[c], again[0][c])


def test_keypoint_matches_sift_precise_and_better_than_weak() -> None:
    sift, weak = keypoint_precision("sift"), keypoint_precision("sift_weak")
    assert sift > 0.7  # the true homographies are right
    assert sift > weak + 0.1


def test_everything_ingests(tmp_path) -> None:
    from evalstore import Store

    found, pairs = matches("orb")
    out = tasks("orb")
    with Store(tmp_path / "e.duckdb") as store:
        for i, name in enumerate(TASKS):
            store.ingest(
                out[name],
                task=name,
                run="hpatches/orb",
                append=i > 0,
                groups=out[f"{name}_groups"],
                git_commit=None,
            )
        result = store.ingest_keypoints(found, run="hpatches/orb-kp", pairs=pairs, git_commit=None)
        assert result.rows == found["pair_id"].size
