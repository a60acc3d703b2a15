"""D2-Net's HPatches-sequences MMA, transcribed from ``benchmark_features`` and the plotting
cell of mihaidusmanu/d2-net ``hpatches_sequences/HPatches-Sequences-Matching-Benchmark.ipynb``
@ e35be018390ffbafd4b19fd1c7f39fefdaa2bf95 (the commit that added it).

The notebook loops over the sequences (``i_*`` illumination, ``v_*`` viewpoint) and, for
image 1 against images 2..6 of each, takes the mutual-nearest-neighbour matches, projects
their image-1 keypoints by ``H_1_k`` and measures the distance to their image-k keypoints.
Here the matches are given (``pos_a``, ``pos_b``: the matched keypoints' positions), so the
matcher is not part of the transcription.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: ``lim = [1, 15]; rng = np.arange(lim[0], lim[1] + 1)``
RNG = np.arange(1, 15 + 1)


@dataclass
class Pair:
    """One image pair of a sequence: image 1 -> image ``im_idx`` with its homography."""

    seq_name: str
    im_idx: int
    pos_a: np.ndarray  # (n, 2): keypoints_a[matches[:, 0], :2]
    pos_b: np.ndarray  # (n, 2): keypoints_b[matches[:, 1], :2]
    homography: np.ndarray  # (3, 3): np.loadtxt(... "H_1_" + str(im_idx))


def benchmark_features(pairs: Sequence[Pair]) -> tuple[dict[int, float], dict[int, float]]:
    """The error accumulation of ``benchmark_features``::

    i_err = {thr: 0 for thr in rng}
    v_err = {thr: 0 for thr in rng}
    for seq_idx, seq_name in tqdm(enumerate(seq_names), total=len(seq_names)):
        ...
        for im_idx in range(2, 7):
            ...
            pos_a = keypoints_a[matches[:, 0], : 2]
            pos_a_h = np.concatenate([pos_a, np.ones([matches.shape[0], 1])], axis=1)
            pos_b_proj_h = np.transpose(np.dot(homography, np.transpose(pos_a_h)))
            pos_b_proj = pos_b_proj_h[:, : 2] / pos_b_proj_h[:, 2 :]
            pos_b = keypoints_b[matches[:, 1], : 2]
            dist = np.sqrt(np.sum((pos_b - pos_b_proj) ** 2, axis=1))
            ...
            if dist.shape[0] == 0:
                dist = np.array([float("inf")])
            for thr in rng:
                if seq_name[0] == 'i':
                    i_err[thr] += np.mean(dist <= thr)
                else:
                    v_err[thr] += np.mean(dist <= thr)
    """
    i_err = {int(thr): 0.0 for thr in RNG}
    v_err = {int(thr): 0.0 for thr in RNG}
    for pair in pairs:
        homography = pair.homography
        pos_a = pair.pos_a.reshape(-1, 2)
        n_matches = pos_a.shape[0]
        pos_a_h = np.concatenate([pos_a, np.ones([n_matches, 1])], axis=1)
        pos_b_proj_h = np.transpose(np.dot(homography, np.transpose(pos_a_h)))
        pos_b_proj = pos_b_proj_h[:, :2] / pos_b_proj_h[:, 2:]
        pos_b = pair.pos_b.reshape(-1, 2)
        dist = np.sqrt(np.sum((pos_b - pos_b_proj) ** 2, axis=1))
        if dist.shape[0] == 0:
            dist = np.array([float("inf")])
        for thr in RNG:
            if pair.seq_name[0] == "i":
                i_err[int(thr)] += np.mean(dist <= thr)
            else:
                v_err[int(thr)] += np.mean(dist <= thr)
    return i_err, v_err


def mma(pairs: Sequence[Pair]) -> dict[str, dict[int, float]]:
    """The plotted MMA curves::

        plt.plot(plt_rng, [(i_err[thr] + v_err[thr]) / ((n_i + n_v) * 5) for thr in plt_rng], ...
        plt.plot(plt_rng, [i_err[thr] / (n_i * 5) for thr in plt_rng], ...   # 'Illumination'
        plt.plot(plt_rng, [v_err[thr] / (n_v * 5) for thr in plt_rng], ...   # 'Viewpoint'

    with ``n_i = 52``, ``n_v = 56`` sequences of 5 pairs each in HPatches; here ``n_i`` and
    ``n_v`` are counted from the pairs given (every sequence has its 5 pairs).
    """
    i_err, v_err = benchmark_features(pairs)
    seqs = {p.seq_name for p in pairs}
    n_i = sum(1 for s in seqs if s[0] == "i")
    n_v = len(seqs) - n_i
    return {
        "overall": {t: (i_err[t] + v_err[t]) / ((n_i + n_v) * 5) for t in i_err},
        "i": {t: i_err[t] / (n_i * 5) for t in i_err} if n_i else {},
        "v": {t: v_err[t] / (n_v * 5) for t in v_err} if n_v else {},
    }
