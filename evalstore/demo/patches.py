"""The patches of the HPatches-style tasks: where they lie in each image of a sequence.

A sequence's patches are keypoints detected once in its reference (the strongest SIFT
keypoints that make good patches: the same patches for every descriptor), mapped into every
target by the true homography (position, size by the local scale, orientation by the local
rotation), then jittered per noise level as HPatches does (:data:`NOISE`: easy / hard /
tough): :func:`make_patches`. Everything is deterministic for a given seed. No function here
touches a database or prints; OpenCV is imported only when patches are made.
"""

from __future__ import annotations

import math
from collections.abc import Sequence as SequenceType
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from evalstore.demo.sequences import Sequence

__all__ = ["NOISE", "NOISE_LEVELS", "Frame", "SequencePatches", "make_patches", "sorted_keypoints"]

NOISE_LEVELS = ("easy", "hard", "tough")

#: The HPatches-like jitter of the target patches per noise level: the largest shift of the
#: position as a fraction of the keypoint size (drawn uniformly in a disc), the largest rotation
#: (degrees) and the largest relative change of the size (log-uniform in ``[1/(1+s), 1+s]``).
NOISE: dict[str, dict[str, float]] = {
    "easy": {"shift": 0.2, "angle": 5.0, "scale": 0.1},
    "hard": {"shift": 0.5, "angle": 15.0, "scale": 0.2},
    "tough": {"shift": 0.8, "angle": 25.0, "scale": 0.3},
}

_MIN_SIZE, _MAX_SIZE = 2.0, 12.0  # SIFT keypoint sizes kept as patches
_MIN_SPACING = 3.0  # px between two patches of one reference
_BORDER = 6.0  # px kept free between a patch (after jitter) and the image border

FloatArray = npt.NDArray[np.float64]


def _project(h: FloatArray, x: FloatArray, y: FloatArray) -> tuple[FloatArray, FloatArray]:
    w = h[2, 0] * x + h[2, 1] * y + h[2, 2]
    return (h[0, 0] * x + h[0, 1] * y + h[0, 2]) / w, (h[1, 0] * x + h[1, 1] * y + h[1, 2]) / w


def _jacobian(h: FloatArray, x: FloatArray, y: FloatArray) -> FloatArray:
    """(n, 2, 2): the derivative of ``x -> H x`` (dehomogenised) at each point."""
    u = h[0, 0] * x + h[0, 1] * y + h[0, 2]
    v = h[1, 0] * x + h[1, 1] * y + h[1, 2]
    w = h[2, 0] * x + h[2, 1] * y + h[2, 2]
    j = np.empty((x.size, 2, 2))
    j[:, 0, 0] = (h[0, 0] * w - u * h[2, 0]) / w**2
    j[:, 0, 1] = (h[0, 1] * w - u * h[2, 1]) / w**2
    j[:, 1, 0] = (h[1, 0] * w - v * h[2, 0]) / w**2
    j[:, 1, 1] = (h[1, 1] * w - v * h[2, 1]) / w**2
    return j


@dataclass(eq=False)
class Frame:
    """Keypoints (x, y, size, angle in degrees, OpenCV's image-coordinate convention)."""

    x: FloatArray
    y: FloatArray
    size: FloatArray
    angle: FloatArray

    def __len__(self) -> int:
        return int(self.x.size)


@dataclass(eq=False)
class SequencePatches:
    """The patches of one sequence: the reference frame and 5 x 3 jittered target frames."""

    ref: Frame
    targets: list[dict[str, Frame]]  # targets[k][noise]


def sorted_keypoints(keypoints: SequenceType[Any]) -> list[Any]:
    """Keypoints strongest first, ties broken by position: an order independent of threads."""
    return sorted(keypoints, key=lambda k: (-k.response, k.pt[1], k.pt[0], -k.size, k.angle))


def _reference_frame(seq: Sequence, n_patches: int) -> Frame:
    """The ``n_patches`` strongest SIFT keypoints of the reference that make good patches.

    Kept: sizes in [2, 12] px; at least 3 px from a stronger patch (so that one location is
    one patch, not several orientations of it); the reference point, and its projection in
    every target, inside the image by 6 px plus the largest jitter of the tough level, so that
    no correspondent ever leaves a target. Sequences with fewer candidates keep what they have.
    """
    import cv2

    height, width = seq.ref.shape
    kps = sorted_keypoints(cv2.SIFT_create().detect(seq.ref, None))
    x = np.array([k.pt[0] for k in kps], dtype=np.float64)
    y = np.array([k.pt[1] for k in kps], dtype=np.float64)
    size = np.array([k.size for k in kps], dtype=np.float64)
    angle = np.array([k.angle for k in kps], dtype=np.float64)
    ok = (size >= _MIN_SIZE) & (size <= _MAX_SIZE)
    tough = NOISE["tough"]
    for h in [np.eye(3), *seq.homographies]:
        tx, ty = _project(h, x, y)
        local = np.sqrt(np.abs(np.linalg.det(_jacobian(h, x, y))))
        reach = _BORDER + tough["shift"] * size * local * (1.0 + tough["scale"])
        ok &= (tx >= reach) & (tx <= width - 1 - reach) & (ty >= reach) & (ty <= height - 1 - reach)
    kept: list[int] = []
    for i in np.flatnonzero(ok):
        if len(kept) == n_patches:
            break
        if kept and np.min(np.hypot(x[kept] - x[i], y[kept] - y[i])) < _MIN_SPACING:
            continue
        kept.append(int(i))
    idx = np.array(kept, dtype=np.int64)
    return Frame(x[idx], y[idx], size[idx], angle[idx])


def _target_frame(
    ref: Frame, h: FloatArray, noise: dict[str, float], rng: np.random.Generator
) -> Frame:
    """The reference patches mapped by ``h`` (position, size, orientation), then jittered."""
    x, y = _project(h, ref.x, ref.y)
    jac = _jacobian(h, ref.x, ref.y)
    theta = np.radians(ref.angle)
    direction = np.stack([np.cos(theta), np.sin(theta)], axis=1)
    mapped = np.einsum("nij,nj->ni", jac, direction)
    angle = np.degrees(np.arctan2(mapped[:, 1], mapped[:, 0]))
    size = ref.size * np.sqrt(np.abs(np.linalg.det(jac)))
    n = len(ref)
    radius = noise["shift"] * size * np.sqrt(rng.random(n))
    phi = rng.uniform(0.0, 2.0 * math.pi, n)
    x = x + radius * np.cos(phi)
    y = y + radius * np.sin(phi)
    angle = np.mod(angle + rng.uniform(-noise["angle"], noise["angle"], n), 360.0)
    size = size * np.exp(rng.uniform(-1.0, 1.0, n) * math.log1p(noise["scale"]))
    return Frame(x, y, size, angle)


def make_patches(
    sequences: SequenceType[Sequence], n_patches: int, seed: int
) -> list[SequencePatches]:
    """The patches of every sequence; they depend on the sequences and the seed only."""
    out = []
    for s, seq in enumerate(sequences):
        ref = _reference_frame(seq, n_patches)
        rng = np.random.default_rng([seed, s, 7])
        targets = [
            {z: _target_frame(ref, h, NOISE[z], rng) for z in NOISE_LEVELS}
            for h in seq.homographies
        ]
        out.append(SequencePatches(ref, targets))
    return out
