"""The descriptors of the HPatches-style demo data: OpenCV's, at given keypoints.

Descriptors (:data:`DESCRIPTORS`):

- ``sift``: OpenCV SIFT, 128 floats, L2 distance.
- ``orb``: OpenCV ORB, 256 bits, Hamming distance.
- ``akaze``: AKAZE (MLDB, 486 bits), Hamming distance.
- ``brisk``: BRISK, 512 bits, Hamming distance. BRISK computes its own orientation.
- ``sift_weak``: a deliberately weakened SIFT, to have a descriptor that is clearly worse:
  SIFT truncated to its first 8 dimensions (the gradient histogram of one of its 16 cells, see
  :data:`WEAK_SIFT_DIMS`), same keypoints, L2 distance.

OpenCV 5 moved AKAZE and BRISK out of the main ``opencv-python-headless`` package into
``opencv-contrib-python-headless`` (``cv2.xfeatures2d``); OpenCV 4 has them in ``cv2``.
:func:`available_descriptors` lists the descriptors the installed OpenCV provides; asking for
another raises :class:`~evalstore.errors.InvalidInput` naming the package to install.

:func:`describe` computes a descriptor at the patches of :mod:`evalstore.demo.patches` (each
at the pyramid level its size says), :func:`distances` and :func:`paired_distances` the L2 or
Hamming distances between descriptors. No function here touches a database or prints; OpenCV
is imported only when a function needs it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from evalstore.demo.patches import Frame
from evalstore.errors import InvalidInput

__all__ = [
    "DESCRIPTORS",
    "WEAK_SIFT_DIMS",
    "available_descriptors",
    "check_descriptor",
    "describe",
    "distances",
    "is_binary",
    "make_extractor",
    "paired_distances",
    "weaken",
]

DESCRIPTORS = ("sift", "orb", "akaze", "brisk", "sift_weak")

#: ``sift_weak`` keeps these dimensions of the SIFT descriptor, its first 8: OpenCV lays SIFT
#: out as 4 x 4 spatial cells (row-major) of 8 orientation bins, so this is the 8-bin gradient
#: histogram of the top-left cell only.
WEAK_SIFT_DIMS = np.arange(8)

_MAGNIFY = 2.0  # descriptors are computed at this multiple of the detected size
_PAD = 64  # reflected border added before computing descriptors, so that none is dropped
_ORB_LEVELS, _ORB_BASE_SIZE = 10, 3.0  # ORB pyramid level 0 for SIFT size 3, one per 1.2x
_AKAZE_OCTAVES, _AKAZE_SUBLEVELS = 4, 4  # OpenCV's defaults

FloatArray = npt.NDArray[np.float64]


def _xfeatures(name: str) -> Callable[..., Any] | None:
    """``cv2.<name>`` (OpenCV 4) or ``cv2.xfeatures2d.<name>`` (OpenCV 5 contrib), or None."""
    import cv2

    factory = getattr(cv2, name, None)
    if factory is None:
        factory = getattr(getattr(cv2, "xfeatures2d", None), name, None)
    return factory


def available_descriptors() -> tuple[str, ...]:
    """The names of :data:`DESCRIPTORS` that the installed OpenCV provides."""
    missing = {
        "akaze": _xfeatures("AKAZE_create") is None,
        "brisk": _xfeatures("BRISK_create") is None,
    }
    return tuple(d for d in DESCRIPTORS if not missing.get(d, False))


def check_descriptor(descriptor: str) -> None:
    """Refuse a descriptor that is not one of :data:`DESCRIPTORS` or that the installed
    OpenCV lacks.

    Raises:
        InvalidInput: naming the descriptors, or the package to install.
    """
    import cv2

    if descriptor not in DESCRIPTORS:
        raise InvalidInput(f"unknown descriptor {descriptor!r}; expected one of {DESCRIPTORS}")
    if descriptor not in available_descriptors():
        raise InvalidInput(
            f"descriptor {descriptor!r} needs OpenCV's {descriptor.upper()}, which OpenCV "
            f"{cv2.__version__} has only in opencv-contrib-python-headless (cv2.xfeatures2d)"
        )


def make_extractor(descriptor: str) -> Any:
    """The OpenCV object that computes ``descriptor`` at given keypoints."""
    import cv2

    if descriptor in ("sift", "sift_weak"):
        return cv2.SIFT_create()
    if descriptor == "orb":
        return cv2.ORB_create(nlevels=_ORB_LEVELS, scaleFactor=1.2, edgeThreshold=31)
    if descriptor == "akaze":
        return _xfeatures("AKAZE_create")()  # type: ignore[misc]
    return _xfeatures("BRISK_create")()  # type: ignore[misc]


def is_binary(descriptor: str) -> bool:
    """Whether ``descriptor`` is compared by Hamming distance (bits), not L2."""
    return descriptor in ("orb", "akaze", "brisk")


def _sift_octave(size: float) -> int:
    """OpenCV's packed SIFT ``octave`` (octave | layer << 8) of a keypoint of this size.

    SIFT's keypoint size is ``2 * 1.6 * 2**(octave + layer / 3)`` in image pixels; ``compute``
    reads the blurred image of that octave and layer, so it must agree with the size.
    """
    f = math.log2(max(size, 1e-6) / 3.2)
    octave = math.floor(f)
    layer = round((f - octave) * 3)
    if layer == 3:
        octave, layer = octave + 1, 0
    if octave < -1:
        octave, layer = -1, 0
    return (octave & 255) | (layer << 8)


def _akaze_levels(width: int, height: int) -> int:
    """The number of AKAZE evolution levels OpenCV builds for an image of this size.

    As ``AKAZEFeatures::Allocate_Memory_Evolution``: octave ``i > 0`` exists while the image
    reduced by ``2**i`` is at least 80 px wide and 40 px high; 4 sublevels per octave.
    """
    octaves = 1
    while octaves < _AKAZE_OCTAVES and width // 2**octaves >= 80 and height // 2**octaves >= 40:
        octaves += 1
    return octaves * _AKAZE_SUBLEVELS


def _keypoints(
    frame: Frame, descriptor: str, pad: int, first: int, akaze_levels: int = 0
) -> list[Any]:
    """One ``cv2.KeyPoint`` per patch, shifted by ``pad``, with the pyramid level that each
    descriptor reads set from the size; ``class_id`` numbers the keypoints from ``first``
    (except for AKAZE, which reads its evolution level there)."""
    import cv2

    out = []
    for i in range(len(frame)):
        x, y = float(frame.x[i]) + pad, float(frame.y[i]) + pad
        size, angle = _MAGNIFY * float(frame.size[i]), float(frame.angle[i]) % 360.0
        if descriptor in ("sift", "sift_weak"):
            kp = cv2.KeyPoint(x, y, size, angle, 0.0, _sift_octave(size), first + i)
        elif descriptor == "orb":
            level = math.log(max(size, 1e-6) / _ORB_BASE_SIZE) / math.log(1.2)
            level = min(max(round(level), 0), _ORB_LEVELS - 1)
            kp = cv2.KeyPoint(x, y, 31.0 * 1.2**level, angle, 0.0, level, first + i)
        elif descriptor == "akaze":
            # AKAZE evolution level i has sigma 1.6 * 2**(i/4); a SIFT size is 2 sigma
            level = round(4.0 * math.log2(max(size, 1e-6) / 2.0 / 1.6))
            level = min(max(level, 0), akaze_levels - 1)
            kp = cv2.KeyPoint(x, y, 2.4 * 2.0 ** (level / 4.0), angle, 0.0, level // 4, level)
        else:
            kp = cv2.KeyPoint(x, y, size, angle, 0.0, 0, first + i)
        out.append(kp)
    return out


def weaken(descriptors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """``sift_weak``: keep :data:`WEAK_SIFT_DIMS` of each SIFT descriptor."""
    return np.ascontiguousarray(descriptors[:, WEAK_SIFT_DIMS])


def describe(
    image: npt.NDArray[np.uint8], frames: list[Frame], descriptor: str, extractor: Any
) -> list[np.ndarray]:
    """The descriptors of several keypoint frames of one image, one (n, d) array per frame.

    The image is padded by reflection first, so that no keypoint is dropped near a border
    (patches are chosen away from the borders, so the reflection only fills the outer part
    of a few supports). OpenCV may reorder the keypoints (ORB groups them by pyramid level):
    ``class_id`` puts each descriptor back in its row (AKAZE keeps the order).
    """
    import cv2

    padded = cv2.copyMakeBorder(image, _PAD, _PAD, _PAD, _PAD, cv2.BORDER_REFLECT_101)
    sizes = [len(f) for f in frames]
    starts = np.cumsum([0, *sizes])
    levels = _akaze_levels(padded.shape[1], padded.shape[0])
    kps = [
        kp
        for f, s in zip(frames, starts[:-1], strict=True)
        for kp in _keypoints(f, descriptor, _PAD, int(s), levels)
    ]
    n = len(kps)
    if n == 0:
        return [np.zeros((0, 1), np.float32) for _ in frames]
    kept, desc = extractor.compute(padded, kps)
    if desc is None or len(kept) != n:
        kept_n = 0 if desc is None else len(kept)
        raise RuntimeError(f"{descriptor}: OpenCV described {kept_n} of {n} keypoints")
    if descriptor == "akaze":
        pts = np.array([k.pt for k in kept])
        if not np.allclose(pts, np.array([k.pt for k in kps]), atol=1e-3):
            raise RuntimeError("akaze: OpenCV reordered the keypoints")
    else:
        rows = np.array([k.class_id for k in kept], dtype=np.int64)
        if not np.array_equal(np.sort(rows), np.arange(n)):
            raise RuntimeError(f"{descriptor}: OpenCV changed the keypoints' class_id")
        ordered = np.empty_like(desc)
        ordered[rows] = desc
        desc = ordered
    if descriptor == "sift_weak":
        desc = weaken(desc)
    return list(np.split(desc, starts[1:-1]))


def distances(a: np.ndarray, b: np.ndarray, binary: bool) -> FloatArray:
    """(len(a), len(b)) distances: Hamming (bit count of XOR) or L2 in float64."""
    if binary:
        x = np.bitwise_xor(a[:, None, :], b[None, :, :])
        return np.bitwise_count(x).sum(axis=2, dtype=np.int64).astype(np.float64)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    sq = (a64 * a64).sum(1)[:, None] + (b64 * b64).sum(1)[None, :] - 2.0 * (a64 @ b64.T)
    return np.sqrt(np.maximum(sq, 0.0))


def paired_distances(a: np.ndarray, b: np.ndarray, binary: bool) -> FloatArray:
    """Distance of each row of ``a`` to the same row of ``b``."""
    if binary:
        return np.bitwise_count(np.bitwise_xor(a, b)).sum(axis=1, dtype=np.int64).astype(float)
    d = a.astype(np.float64) - b.astype(np.float64)
    return np.sqrt((d * d).sum(axis=1))
