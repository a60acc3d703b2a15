"""The three HPatches tasks (patch verification, image matching, patch retrieval) for one
descriptor, from real photographs and real descriptors (OpenCV).

The demo database needs results that behave like the real thing, without downloading HPatches.
The modules of :mod:`evalstore.demo` build them from the photographs bundled with scikit-image
and the descriptor implementations of OpenCV, and return plain arrays ready for
:meth:`evalstore.Store.ingest`:

1. :func:`evalstore.demo.sequences.make_sequences` makes HPatches-like sequences: a reference
   image and 5 targets, ``v_*`` (viewpoint: the targets are the photograph seen through
   increasingly strong random homographies) or ``i_*`` (illumination: same geometry,
   increasingly strong photometric changes), each target with its true homography ``H``
   (``x_t ~ H x_ref``).
2. :func:`hpatches_tasks` computes the three HPatches tasks for one descriptor: patches are
   keypoints detected once in each reference (the same patches for every descriptor),
   projected into every target by the true homography with the easy / hard / tough jitter of
   HPatches (:mod:`evalstore.demo.patches`), and described there by the descriptor's own
   ``compute`` (:mod:`evalstore.demo.descriptors`).
3. :func:`evalstore.demo.matches.keypoint_matches` detects and describes keypoints in the
   reference and in each target independently and matches them (mutual nearest neighbours),
   for the geometric matching metrics (``task="keypoints"``), with the true homographies as
   ground truth.

This module holds 2.; :mod:`evalstore.demo.hpatches` records the runs. Everything is
deterministic for a given seed. No function here touches a database or prints.

Cost, on 2 cores: 8 sequences at 320 px with 100 patches, 50 retrieval queries and 500
keypoints, all 5 descriptors, about 8 s (12 s on a busy machine); 4 sequences at 160 px with
30 patches, 12 queries and 200 keypoints, about 1.5 s. At the default size the matching mAP
orders the descriptors sift > orb > akaze > brisk >> sift_weak.
"""

from __future__ import annotations

from collections.abc import Sequence as SequenceType
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from evalstore.demo.descriptors import (
    check_descriptor,
    describe,
    distances,
    is_binary,
    make_extractor,
    paired_distances,
)
from evalstore.demo.patches import NOISE_LEVELS, Frame, SequencePatches, make_patches
from evalstore.demo.sequences import N_TARGETS, Sequence, check_sequences
from evalstore.errors import InvalidInput

__all__ = ["hpatches_tasks"]

IntArray = npt.NDArray[np.int64]
Arrays = dict[str, np.ndarray]


@dataclass(eq=False)
class _Described:
    """Descriptors of one sequence: ``ref`` (n, d) and ``targets[k][noise]`` (n, d)."""

    ref: np.ndarray
    targets: list[dict[str, np.ndarray]]


def _describe_sequences(
    sequences: SequenceType[Sequence], patches: list[SequencePatches], descriptor: str
) -> list[_Described]:
    extractor = make_extractor(descriptor)
    out = []
    for seq, p in zip(sequences, patches, strict=True):
        (ref,) = describe(seq.ref, [p.ref], descriptor, extractor)
        targets = []
        for image, frames in zip(seq.targets, p.targets, strict=True):
            desc = describe(image, [frames[z] for z in NOISE_LEVELS], descriptor, extractor)
            targets.append(dict(zip(NOISE_LEVELS, desc, strict=True)))
        out.append(_Described(ref, targets))
    return out


def _nearest_patches(frame: Frame, k: int = 3) -> IntArray:
    """(n, min(k, n - 1)): the indices of the k patches nearest to each (by position)."""
    d = np.hypot(frame.x[:, None] - frame.x[None, :], frame.y[:, None] - frame.y[None, :])
    np.fill_diagonal(d, np.inf)
    return np.argsort(d, axis=1, kind="stable")[:, : min(k, len(frame) - 1)]


def _verification(
    names: list[str],
    patches: list[SequencePatches],
    described: list[_Described],
    binary: bool,
    rng: np.random.Generator,
) -> tuple[Arrays, Arrays]:
    """Two lists, ``intra`` and ``inter``, with the same positives and balanced negatives."""
    n_seq = len(names)
    neighbours = [_nearest_patches(p.ref) for p in patches]
    pos_a: list[Any] = []
    pos_b: list[Any] = []
    neg: dict[str, tuple[list[Any], list[Any]]] = {"intra": ([], []), "inter": ([], [])}
    pos_ids, neg_ids = [], []
    for s, d in enumerate(described):
        n = d.ref.shape[0]
        for i in range(n):
            k, z = rng.integers(N_TARGETS), NOISE_LEVELS[rng.integers(3)]
            pos_a.append(d.ref[i])
            pos_b.append(d.targets[k][z][i])
            pos_ids.append(f"pos/{names[s]}/{i}")
            neg_ids.append(f"neg/{names[s]}/{i}")
            # intra: one of the 3 patches nearest to it in the same sequence, a random target
            k, z = rng.integers(N_TARGETS), NOISE_LEVELS[rng.integers(3)]
            j = int(neighbours[s][i, rng.integers(neighbours[s].shape[1])])
            neg["intra"][0].append(d.ref[i])
            neg["intra"][1].append(d.targets[k][z][j])
            # inter: a patch of another sequence, in a random target
            other = (s + rng.integers(1, n_seq)) % n_seq
            k, z = rng.integers(N_TARGETS), NOISE_LEVELS[rng.integers(3)]
            m = described[other].ref.shape[0]
            j = int(rng.integers(m))
            neg["inter"][0].append(d.ref[i])
            neg["inter"][1].append(described[other].targets[k][z][j])
    positive = -paired_distances(np.array(pos_a), np.array(pos_b), binary)
    groups, items, scores, labels = [], [], [], []
    for name in ("inter", "intra"):
        negative = -paired_distances(np.array(neg[name][0]), np.array(neg[name][1]), binary)
        n_pos, n_neg = positive.size, negative.size
        groups.append(np.full(n_pos + n_neg, name))
        items += [pos_ids, neg_ids]
        scores += [positive, negative]
        labels += [np.ones(n_pos, np.int8), -np.ones(n_neg, np.int8)]
    task = {
        "group_id": np.concatenate(groups),
        "item_id": np.array([i for chunk in items for i in chunk]),
        "score": np.concatenate(scores),
        "label": np.concatenate(labels),
    }
    meta = {
        "group_id": np.array(["inter", "intra"]),
        "negatives": np.array(["other sequence", "same sequence"]),
    }
    return task, meta


def _matching(
    sequences: SequenceType[Sequence], described: list[_Described], binary: bool
) -> tuple[Arrays, Arrays]:
    """One list per (sequence, target, noise): each reference patch's nearest neighbour."""
    groups, items, scores, labels = [], [], [], []
    meta: dict[str, list[Any]] = {
        k: [] for k in ("group_id", "n_positives", "sequence", "kind", "noise", "target")
    }
    for seq, d in zip(sequences, described, strict=True):
        n = d.ref.shape[0]
        for k in range(N_TARGETS):
            for z in NOISE_LEVELS:
                gid = f"{seq.name}/{k + 1}/{z}"
                dist = distances(d.ref, d.targets[k][z], binary)
                nn = np.argmin(dist, axis=1) if n else np.zeros(0, np.int64)
                groups.append(np.full(n, gid))
                items.append(np.arange(n, dtype=np.int64))
                scores.append(-dist[np.arange(n), nn])
                labels.append(np.where(nn == np.arange(n), 1, -1).astype(np.int8))
                for key, value in zip(
                    meta, (gid, n, seq.name, seq.kind, z, str(k + 1)), strict=True
                ):
                    meta[key].append(value)
    task = {
        "group_id": np.concatenate(groups),
        "item_id": np.concatenate(items),
        "score": np.concatenate(scores),
        "label": np.concatenate(labels),
    }
    out_meta = {k: np.array(v) for k, v in meta.items()}
    out_meta["n_positives"] = out_meta["n_positives"].astype(np.int64)
    return task, out_meta


def _retrieval(
    sequences: SequenceType[Sequence],
    described: list[_Described],
    binary: bool,
    n_queries: int,
    n_distractors: int,
    rng: np.random.Generator,
) -> tuple[Arrays, Arrays]:
    """One list per query patch: its 5 correspondents, its sequence ignored, distractors."""
    n_seq = len(sequences)
    counts = [d.ref.shape[0] for d in described]
    perms = [rng.permutation(n) for n in counts]
    # the pool of target patches per noise level: (sequence, target, patch) of every row
    pool_seq = np.concatenate([np.full(N_TARGETS * n, s) for s, n in enumerate(counts)])
    pool_tgt = np.concatenate([np.repeat(np.arange(N_TARGETS), n) for n in counts])
    pool_idx = np.concatenate([np.tile(np.arange(n), N_TARGETS) for n in counts])
    pool_desc = {
        z: np.concatenate([d.targets[k][z] for d in described for k in range(N_TARGETS)])
        for z in NOISE_LEVELS
    }
    names = np.array([s.name for s in sequences])
    item_names = np.char.add(
        np.char.add(np.char.add(names[pool_seq], "/"), (pool_tgt + 1).astype(str)),
        np.char.add("/", pool_idx.astype(str)),
    )
    groups, items, scores, labels = [], [], [], []
    meta: dict[str, list[str]] = {k: [] for k in ("group_id", "sequence", "kind", "noise")}
    taken = [0] * n_seq
    q = 0
    while len(meta["group_id"]) < n_queries and q < n_seq * max(counts, default=0):
        s = q % n_seq
        z = NOISE_LEVELS[(q // n_seq) % 3]
        q += 1
        if taken[s] >= counts[s]:
            continue
        i = int(perms[s][taken[s]])
        taken[s] += 1
        own = pool_seq == s
        positive = own & (pool_idx == i)
        others = np.flatnonzero(~own)
        if n_distractors < others.size:
            others = np.sort(rng.choice(others, n_distractors, replace=False))
        rows = np.concatenate([np.flatnonzero(own), others])
        label = np.where(positive[rows], 1, np.where(own[rows], 0, -1)).astype(np.int8)
        dist = distances(described[s].ref[i : i + 1], pool_desc[z][rows], binary)[0]
        gid = f"{sequences[s].name}/{i}"
        groups.append(np.full(rows.size, gid))
        items.append(item_names[rows])
        scores.append(-dist)
        labels.append(label)
        for key, value in zip(meta, (gid, sequences[s].name, sequences[s].kind, z), strict=True):
            meta[key].append(value)
    task = {
        "group_id": np.concatenate(groups),
        "item_id": np.concatenate(items),
        "score": np.concatenate(scores),
        "label": np.concatenate(labels),
    }
    return task, {k: np.array(v) for k, v in meta.items()}


def hpatches_tasks(
    sequences: SequenceType[Sequence],
    descriptor: str,
    n_patches: int = 100,
    seed: int = 0,
    *,
    n_queries: int = 50,
    n_distractors: int = 1000,
) -> dict[str, Arrays]:
    """The three HPatches tasks for one descriptor, as arrays ready for ``Store.ingest``.

    Patches: the ``n_patches`` strongest SIFT keypoints of each reference (sizes 2-12 px, 3 px
    apart, far enough from the borders that every correspondent stays in every target: no
    patch is dropped later, so every retrieval query has exactly 5 positives). The same
    patches serve every descriptor. In each target the patch is the reference keypoint mapped
    by the true homography (position, size by the local scale, orientation by the local
    rotation), then jittered per noise level as :data:`NOISE` says (easy / hard / tough, each
    target and level drawn independently). Each descriptor is computed by its OpenCV
    ``compute`` at those keypoints, over a region twice the detected size (as HPatches
    patches cover a magnified detection region), the pyramid level it reads following the
    size (SIFT's octave and layer, ORB's level, AKAZE's evolution level; BRISK finds its own).

    Scores are ``-distance`` (L2 for sift and sift_weak, Hamming for orb, akaze and brisk),
    so higher is better. Labels are int8 +1 / -1 / 0.

    Returns:
        ``{task: arrays}`` with tasks

        - ``verification``: lists ``inter`` and ``intra``; each has one positive pair per
          patch (the reference patch and its correspondent in a random target and noise
          level, the same pairs in both lists) and as many negatives: the reference patch and
          a random patch of another sequence (``inter``), or one of the 3 patches nearest to
          it in its own sequence (``intra``, the harder list), each in a random target and
          noise level. ``item_id`` ``pos/<seq>/<i>`` or ``neg/<seq>/<i>``.
        - ``matching``: one list per (sequence, target, noise level), ``group_id``
          ``<seq>/<k>/<noise>`` (k = 1..5): for each reference patch (``item_id`` = its
          index) its nearest neighbour among the target's patches; +1 when it is the right
          one.
        - ``retrieval``: one list per query, ``group_id`` ``<seq>/<i>``: up to ``n_queries``
          reference patches taken in turn from each sequence, the noise level cycling per
          round; items ``<seq>/<k>/<j>`` are the query's 5 correspondents (+1), the other
          patches of its sequence's targets (0, ignored) and ``n_distractors`` patches drawn
          from the other sequences' targets (-1), all at the query's noise level.
        - ``verification_groups``: ``group_id``, ``negatives``.
        - ``matching_groups``: ``group_id``, ``n_positives`` (the number of query patches, as
          HPatches), ``sequence``, ``kind``, ``noise``, ``target``.
        - ``retrieval_groups``: ``group_id``, ``sequence``, ``kind``, ``noise``.

    A sequence with fewer than 2 usable patches (a smooth photograph at a small size: ``clock``
    has only a handful of SIFT keypoints) is left out of all three tasks.

    Raises:
        InvalidInput: unknown or unavailable descriptor, fewer than 2 sequences (with at least
            2 patches each), ``n_patches`` or ``n_queries`` below 2, ``n_distractors`` below 1.
    """
    check_descriptor(descriptor)
    check_sequences(sequences)
    if len(sequences) < 2:
        raise InvalidInput("hpatches_tasks needs at least 2 sequences (for the negatives)")
    for what, value in (("n_patches", n_patches), ("n_queries", n_queries)):
        if value < 2:
            raise InvalidInput(f"{what} must be at least 2, got {value}")
    if n_distractors < 1:
        raise InvalidInput(f"n_distractors must be at least 1, got {n_distractors}")
    patches = make_patches(sequences, n_patches, seed)
    used = [i for i, p in enumerate(patches) if len(p.ref) >= 2]
    if len(used) < 2:
        raise InvalidInput(
            "fewer than 2 sequences have at least 2 usable patches; use larger images"
        )
    sequences = [sequences[i] for i in used]
    patches = [patches[i] for i in used]
    described = _describe_sequences(sequences, patches, descriptor)
    binary = is_binary(descriptor)
    names = [s.name for s in sequences]
    verification, verification_groups = _verification(
        names, patches, described, binary, np.random.default_rng([seed, 1])
    )
    matching, matching_groups = _matching(sequences, described, binary)
    retrieval, retrieval_groups = _retrieval(
        sequences, described, binary, n_queries, n_distractors, np.random.default_rng([seed, 2])
    )
    return {
        "verification": verification,
        "matching": matching,
        "retrieval": retrieval,
        "verification_groups": verification_groups,
        "matching_groups": matching_groups,
        "retrieval_groups": retrieval_groups,
    }
