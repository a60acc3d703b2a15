"""HPatches-style evaluation data from real photographs and real descriptors (OpenCV).

The demo database needs results that behave like the real thing, without downloading HPatches.
This module builds them from the photographs bundled with scikit-image and the descriptor
implementations of OpenCV, and returns plain arrays ready for :meth:`evalstore.Store.ingest`:

1. :func:`make_sequences` makes HPatches-like sequences: a reference image and 5 targets,
   ``v_*`` (viewpoint: the targets are the photograph seen through increasingly strong random
   homographies) or ``i_*`` (illumination: same geometry, increasingly strong photometric
   changes), each target with its true homography ``H`` (``x_t ~ H x_ref``).
2. :func:`hpatches_tasks` computes the three HPatches tasks (patch verification, image
   matching, patch retrieval) for one descriptor: patches are keypoints detected once in each
   reference (the same patches for every descriptor), projected into every target by the true
   homography with the easy / hard / tough jitter of HPatches, and described there by the
   descriptor's own ``compute``.
3. :func:`keypoint_matches` detects and describes keypoints in the reference and in each target
   independently and matches them (mutual nearest neighbours), for the geometric matching
   metrics (``task="keypoints"``), with the true homographies as ground truth.

Everything is deterministic for a given seed. No function here touches a database or prints.

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

Images come from ``skimage.data`` (bundled with scikit-image, no download): scikit-image is
imported only by :func:`make_sequences`.

Cost, on 2 cores: 8 sequences at 320 px with 100 patches, 50 retrieval queries and 500
keypoints, all 5 descriptors, about 8 s (12 s on a busy machine); 4 sequences at 160 px with
30 patches, 12 queries and 200 keypoints, about 1.5 s. At the default size the matching mAP
orders the descriptors sift > orb > akaze > brisk >> sift_weak.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from collections.abc import Sequence as SequenceType
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt

from evalstore.errors import InvalidInput

__all__ = [
    "DESCRIPTORS",
    "KINDS",
    "NOISE",
    "NOISE_LEVELS",
    "PHOTOS",
    "WEAK_SIFT_DIMS",
    "Sequence",
    "available_descriptors",
    "hpatches_tasks",
    "keypoint_matches",
    "make_sequences",
]

DESCRIPTORS = ("sift", "orb", "akaze", "brisk", "sift_weak")
KINDS = ("viewpoint", "illumination")
NOISE_LEVELS = ("easy", "hard", "tough")

#: The HPatches-like jitter of the target patches per noise level: the largest shift of the
#: position as a fraction of the keypoint size (drawn uniformly in a disc), the largest rotation
#: (degrees) and the largest relative change of the size (log-uniform in ``[1/(1+s), 1+s]``).
NOISE: dict[str, dict[str, float]] = {
    "easy": {"shift": 0.2, "angle": 5.0, "scale": 0.1},
    "hard": {"shift": 0.5, "angle": 15.0, "scale": 0.2},
    "tough": {"shift": 0.8, "angle": 25.0, "scale": 0.3},
}

#: Photographs of ``skimage.data`` bundled with scikit-image (no download), in sequence order.
PHOTOS = (
    "camera",
    "coffee",
    "astronaut",
    "chelsea",
    "gravel",
    "coins",
    "brick",
    "page",
    "grass",
    "moon",
    "rocket",
    "clock",
)

#: ``sift_weak`` keeps these dimensions of the SIFT descriptor, its first 8: OpenCV lays SIFT
#: out as 4 x 4 spatial cells (row-major) of 8 orientation bins, so this is the 8-bin gradient
#: histogram of the top-left cell only.
WEAK_SIFT_DIMS = np.arange(8)

N_TARGETS = 5

_WORLD = 1.4  # the photograph is this much larger than the reference crop (content to see)
_MAX_ROTATION = 30.0  # degrees, at the last target
_MAX_ZOOM_IN, _MAX_ZOOM_OUT = 1.3, 0.7
_MAX_PERSPECTIVE = 0.3  # |h31|, |h32| * longer side / 2, at the last target
_MAX_SHIFT = 0.05  # translation, fraction of the image side, at the last target

_MIN_SIZE, _MAX_SIZE = 2.0, 12.0  # SIFT keypoint sizes kept as patches
_MAGNIFY = 2.0  # descriptors are computed at this multiple of the detected size
_MIN_SPACING = 3.0  # px between two patches of one reference
_BORDER = 6.0  # px kept free between a patch (after jitter) and the image border
_PAD = 64  # reflected border added before computing descriptors, so that none is dropped
_ORB_LEVELS, _ORB_BASE_SIZE = 10, 3.0  # ORB pyramid level 0 for SIFT size 3, one per 1.2x
_AKAZE_OCTAVES, _AKAZE_SUBLEVELS = 4, 4  # OpenCV's defaults

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Arrays = dict[str, np.ndarray]


@dataclass(eq=False)
class Sequence:
    """One HPatches-like sequence: a reference image and its 5 targets.

    Attributes:
        name: ``v_<photo>`` (viewpoint) or ``i_<photo>`` (illumination), as HPatches names them.
        kind: ``"viewpoint"`` or ``"illumination"``.
        ref: the reference image, grayscale uint8 (H, W).
        targets: the 5 target images, each grayscale uint8 with the shape of ``ref``.
        homographies: 5 float64 (3, 3) matrices, ``homographies[k]`` maps reference pixels to
            ``targets[k]``: ``x_t ~ H x_ref`` (identity for illumination sequences). Pixel
            coordinates are OpenCV's: (0, 0) is the centre of the top-left pixel.
    """

    name: str
    kind: str
    ref: npt.NDArray[np.uint8]
    targets: list[npt.NDArray[np.uint8]]
    homographies: list[FloatArray]


# --------------------------------------------------------------------------- sequences


def _load_photo(name: str) -> npt.NDArray[np.uint8]:
    """A bundled scikit-image photograph as grayscale uint8."""
    from skimage import data  # the demo extra; imported here only

    image = np.asarray(getattr(data, name)())
    if image.ndim == 3:
        image = cv2.cvtColor(np.ascontiguousarray(image[..., :3]), cv2.COLOR_RGB2GRAY)
    return np.ascontiguousarray(image, dtype=np.uint8)


def _resize(image: npt.NDArray[np.uint8], width: int, height: int) -> npt.NDArray[np.uint8]:
    shrink = width < image.shape[1]
    interpolation = cv2.INTER_AREA if shrink else cv2.INTER_LINEAR
    return cv2.resize(image, (width, height), interpolation=interpolation)


def _translation(tx: float, ty: float) -> FloatArray:
    return np.array([[1.0, 0.0, tx], [0.0, 1.0, ty], [0.0, 0.0, 1.0]])


def _viewpoint_homographies(rng: np.random.Generator, width: int, height: int) -> list[FloatArray]:
    """5 homographies of increasing strength t = k/5 about the image centre.

    One direction per sequence (the sign of the rotation, zoom in or out, the perspective
    tilt), magnitudes growing along the sequence: rotation up to 30 degrees, zoom in
    [0.7, 1.3], perspective up to +-30% at the corners, shift up to 5% of the image.
    """
    side = max(width, height)
    centre = np.array([(width - 1) / 2.0, (height - 1) / 2.0])
    turn = rng.choice([-1.0, 1.0])
    zoom = math.log(_MAX_ZOOM_IN) if rng.random() < 0.5 else math.log(_MAX_ZOOM_OUT)
    tilt = rng.uniform(-1.0, 1.0, 2)
    tilt /= max(np.abs(tilt).max(), 1e-9)
    drift = rng.uniform(-1.0, 1.0, 2)
    out = []
    for k in range(1, N_TARGETS + 1):
        t = k / N_TARGETS
        angle = math.radians(turn * t * _MAX_ROTATION * rng.uniform(0.75, 1.0))
        scale = math.exp(t * zoom * rng.uniform(0.6, 1.0))
        p = t * _MAX_PERSPECTIVE * rng.uniform(0.5, 1.0) * tilt / (side / 2.0)
        shift = t * _MAX_SHIFT * drift * np.array([width, height])
        c, s = scale * math.cos(angle), scale * math.sin(angle)
        a = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        persp = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [p[0], p[1], 1.0]])
        h = _translation(*(centre + shift)) @ a @ persp @ _translation(*(-centre))
        out.append(h / h[2, 2])
    return out


def _illumination_targets(
    rng: np.random.Generator, ref: npt.NDArray[np.uint8]
) -> list[npt.NDArray[np.uint8]]:
    """5 photometric changes of increasing strength t = k/5 (geometry unchanged).

    Per sequence a direction (brighter or darker, gamma up or down, the direction of a light
    gradient); per target: gamma up to x/÷ 2, gain up to x/÷ 1.8, a linear light gradient up to
    +-45%, Gaussian noise of sigma 1 + 4t grey levels, and from t = 0.6 on a slight blur.
    """
    height, width = ref.shape
    x = ref.astype(np.float64) / 255.0
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float64)
    xx = 2.0 * xx / max(width - 1, 1) - 1.0
    yy = 2.0 * yy / max(height - 1, 1) - 1.0
    g_dir, b_dir = rng.choice([-1.0, 1.0], 2)
    theta = rng.uniform(0.0, 2.0 * math.pi)
    ramp = math.cos(theta) * xx + math.sin(theta) * yy
    out = []
    for k in range(1, N_TARGETS + 1):
        t = k / N_TARGETS
        gamma = math.exp(g_dir * t * math.log(2.0) * rng.uniform(0.6, 1.0))
        gain = math.exp(b_dir * t * math.log(1.8) * rng.uniform(0.6, 1.0))
        light = 1.0 + t * 0.45 * rng.uniform(0.6, 1.0) * ramp
        y = gain * light * np.power(x, gamma)
        if t >= 0.6:
            y = cv2.GaussianBlur(y, (0, 0), sigmaX=1.5 * (t - 0.4))
        y = 255.0 * y + rng.normal(0.0, 1.0 + 4.0 * t, y.shape)
        out.append(np.clip(np.rint(y), 0, 255).astype(np.uint8))
    return out


def make_sequences(n_sequences: int = 8, seed: int = 0, size: int = 320) -> list[Sequence]:
    """HPatches-like sequences from the photographs bundled with scikit-image.

    Sequence ``i`` uses photograph ``PHOTOS[i % 12]``; kinds alternate viewpoint /
    illumination (``v_camera``, ``i_coffee``, ``v_astronaut``, ...); from the 13th on, each
    photograph comes back with the other kind, so at most 24 sequences have distinct names.

    Each photograph is converted to grayscale and resized so that the reference, its central
    crop, has ``size`` pixels along its longer side, the photograph itself being 1.4 times
    larger: a viewpoint target shows the photograph through its homography (OpenCV
    ``warpPerspective``, bilinear; the little that falls outside the photograph is reflected),
    so zooming out or turning reveals real content, not black borders.

    Viewpoint targets: homographies of growing strength (rotation up to 30 degrees, zoom
    0.7-1.3, perspective, a small shift), one direction per sequence. Illumination targets:
    ``H`` = identity and growing photometric changes (gamma, gain, a light gradient, noise,
    slight blur).

    Args:
        n_sequences: 1 to 24.
        seed: the random seed; sequence ``i`` depends only on ``(seed, i, size)``.
        size: the longer side of the images, at least 96 px.

    Returns:
        The sequences, in order.

    Raises:
        InvalidInput: ``n_sequences`` or ``size`` out of range.
    """
    if not 1 <= n_sequences <= 2 * len(PHOTOS):
        raise InvalidInput(f"n_sequences must be 1 to {2 * len(PHOTOS)}, got {n_sequences}")
    if size < 96:
        raise InvalidInput(f"size must be at least 96 px, got {size}")
    out = []
    for i in range(n_sequences):
        photo = PHOTOS[i % len(PHOTOS)]
        kind = KINDS[(i + i // len(PHOTOS)) % 2]
        rng = np.random.default_rng([seed, i])
        image = _load_photo(photo)
        scale = size / max(image.shape)
        width = max(round(image.shape[1] * scale), 1)
        height = max(round(image.shape[0] * scale), 1)
        world = _resize(image, round(width * _WORLD), round(height * _WORLD))
        ox = (world.shape[1] - width) // 2
        oy = (world.shape[0] - height) // 2
        ref = np.ascontiguousarray(world[oy : oy + height, ox : ox + width])
        if kind == "viewpoint":
            homographies = _viewpoint_homographies(rng, width, height)
            crop = _translation(-ox, -oy)  # world -> reference pixels
            targets = [
                cv2.warpPerspective(
                    world,
                    h @ crop,
                    (width, height),
                    flags=cv2.INTER_LINEAR,
                    borderMode=cv2.BORDER_REFLECT_101,
                )
                for h in homographies
            ]
        else:
            homographies = [np.eye(3) for _ in range(N_TARGETS)]
            targets = _illumination_targets(rng, ref)
        prefix = "v" if kind == "viewpoint" else "i"
        out.append(Sequence(f"{prefix}_{photo}", kind, ref, targets, homographies))
    return out


# --------------------------------------------------------------------------- geometry


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
class _Frame:
    """Keypoints (x, y, size, angle in degrees, OpenCV's image-coordinate convention)."""

    x: FloatArray
    y: FloatArray
    size: FloatArray
    angle: FloatArray

    def __len__(self) -> int:
        return int(self.x.size)


@dataclass(eq=False)
class _SequencePatches:
    """The patches of one sequence: the reference frame and 5 x 3 jittered target frames."""

    ref: _Frame
    targets: list[dict[str, _Frame]]  # targets[k][noise]


def _sorted_keypoints(keypoints: SequenceType[Any]) -> list[Any]:
    """Keypoints strongest first, ties broken by position: an order independent of threads."""
    return sorted(keypoints, key=lambda k: (-k.response, k.pt[1], k.pt[0], -k.size, k.angle))


def _reference_frame(seq: Sequence, n_patches: int) -> _Frame:
    """The ``n_patches`` strongest SIFT keypoints of the reference that make good patches.

    Kept: sizes in [2, 12] px; at least 3 px from a stronger patch (so that one location is
    one patch, not several orientations of it); the reference point, and its projection in
    every target, inside the image by 6 px plus the largest jitter of the tough level, so that
    no correspondent ever leaves a target. Sequences with fewer candidates keep what they have.
    """
    height, width = seq.ref.shape
    kps = _sorted_keypoints(cv2.SIFT_create().detect(seq.ref, None))
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
    return _Frame(x[idx], y[idx], size[idx], angle[idx])


def _target_frame(
    ref: _Frame, h: FloatArray, noise: dict[str, float], rng: np.random.Generator
) -> _Frame:
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
    return _Frame(x, y, size, angle)


def _patches(
    sequences: SequenceType[Sequence], n_patches: int, seed: int
) -> list[_SequencePatches]:
    """The patches of every sequence; they depend on the sequences and the seed only."""
    out = []
    for s, seq in enumerate(sequences):
        ref = _reference_frame(seq, n_patches)
        rng = np.random.default_rng([seed, s, 7])
        targets = [
            {z: _target_frame(ref, h, NOISE[z], rng) for z in NOISE_LEVELS}
            for h in seq.homographies
        ]
        out.append(_SequencePatches(ref, targets))
    return out


# --------------------------------------------------------------------------- descriptors


def _xfeatures(name: str) -> Callable[..., Any] | None:
    """``cv2.<name>`` (OpenCV 4) or ``cv2.xfeatures2d.<name>`` (OpenCV 5 contrib), or None."""
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


def _check_descriptor(descriptor: str) -> None:
    if descriptor not in DESCRIPTORS:
        raise InvalidInput(f"unknown descriptor {descriptor!r}; expected one of {DESCRIPTORS}")
    if descriptor not in available_descriptors():
        raise InvalidInput(
            f"descriptor {descriptor!r} needs OpenCV's {descriptor.upper()}, which OpenCV "
            f"{cv2.__version__} has only in opencv-contrib-python-headless (cv2.xfeatures2d)"
        )


def _extractor(descriptor: str) -> Any:
    """The OpenCV object that computes ``descriptor`` at given keypoints."""
    if descriptor in ("sift", "sift_weak"):
        return cv2.SIFT_create()
    if descriptor == "orb":
        return cv2.ORB_create(nlevels=_ORB_LEVELS, scaleFactor=1.2, edgeThreshold=31)
    if descriptor == "akaze":
        return _xfeatures("AKAZE_create")()  # type: ignore[misc]
    return _xfeatures("BRISK_create")()  # type: ignore[misc]


def _is_binary(descriptor: str) -> bool:
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
    frame: _Frame, descriptor: str, pad: int, first: int, akaze_levels: int = 0
) -> list[Any]:
    """One ``cv2.KeyPoint`` per patch, shifted by ``pad``, with the pyramid level that each
    descriptor reads set from the size; ``class_id`` numbers the keypoints from ``first``
    (except for AKAZE, which reads its evolution level there)."""
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


def _weaken(descriptors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """``sift_weak``: keep :data:`WEAK_SIFT_DIMS` of each SIFT descriptor."""
    return np.ascontiguousarray(descriptors[:, WEAK_SIFT_DIMS])


def _describe(
    image: npt.NDArray[np.uint8], frames: list[_Frame], descriptor: str, extractor: Any
) -> list[np.ndarray]:
    """The descriptors of several keypoint frames of one image, one (n, d) array per frame.

    The image is padded by reflection first, so that no keypoint is dropped near a border
    (patches are chosen away from the borders, so the reflection only fills the outer part
    of a few supports). OpenCV may reorder the keypoints (ORB groups them by pyramid level):
    ``class_id`` puts each descriptor back in its row (AKAZE keeps the order).
    """
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
        desc = _weaken(desc)
    return list(np.split(desc, starts[1:-1]))


def _distances(a: np.ndarray, b: np.ndarray, binary: bool) -> FloatArray:
    """(len(a), len(b)) distances: Hamming (bit count of XOR) or L2 in float64."""
    if binary:
        x = np.bitwise_xor(a[:, None, :], b[None, :, :])
        return np.bitwise_count(x).sum(axis=2, dtype=np.int64).astype(np.float64)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    sq = (a64 * a64).sum(1)[:, None] + (b64 * b64).sum(1)[None, :] - 2.0 * (a64 @ b64.T)
    return np.sqrt(np.maximum(sq, 0.0))


def _paired_distances(a: np.ndarray, b: np.ndarray, binary: bool) -> FloatArray:
    """Distance of each row of ``a`` to the same row of ``b``."""
    if binary:
        return np.bitwise_count(np.bitwise_xor(a, b)).sum(axis=1, dtype=np.int64).astype(float)
    d = a.astype(np.float64) - b.astype(np.float64)
    return np.sqrt((d * d).sum(axis=1))


# --------------------------------------------------------------------------- HPatches tasks


@dataclass(eq=False)
class _Described:
    """Descriptors of one sequence: ``ref`` (n, d) and ``targets[k][noise]`` (n, d)."""

    ref: np.ndarray
    targets: list[dict[str, np.ndarray]]


def _describe_sequences(
    sequences: SequenceType[Sequence], patches: list[_SequencePatches], descriptor: str
) -> list[_Described]:
    extractor = _extractor(descriptor)
    out = []
    for seq, p in zip(sequences, patches, strict=True):
        (ref,) = _describe(seq.ref, [p.ref], descriptor, extractor)
        targets = []
        for image, frames in zip(seq.targets, p.targets, strict=True):
            desc = _describe(image, [frames[z] for z in NOISE_LEVELS], descriptor, extractor)
            targets.append(dict(zip(NOISE_LEVELS, desc, strict=True)))
        out.append(_Described(ref, targets))
    return out


def _check_sequences(sequences: SequenceType[Sequence]) -> None:
    names = [s.name for s in sequences]
    if len(set(names)) != len(names):
        raise InvalidInput(f"sequence names must be distinct, got {names}")
    for s in sequences:
        if len(s.targets) != N_TARGETS or len(s.homographies) != N_TARGETS:
            raise InvalidInput(f"sequence {s.name}: expected {N_TARGETS} targets and homographies")


def _nearest_patches(frame: _Frame, k: int = 3) -> IntArray:
    """(n, min(k, n - 1)): the indices of the k patches nearest to each (by position)."""
    d = np.hypot(frame.x[:, None] - frame.x[None, :], frame.y[:, None] - frame.y[None, :])
    np.fill_diagonal(d, np.inf)
    return np.argsort(d, axis=1, kind="stable")[:, : min(k, len(frame) - 1)]


def _verification(
    names: list[str],
    patches: list[_SequencePatches],
    described: list[_Described],
    binary: bool,
    rng: np.random.Generator,
) -> tuple[Arrays, Arrays]:
    """Two lists, ``intra`` and ``inter``, with the same positives and balanced negatives."""
    n_seq = len(names)
    neighbours = [_nearest_patches(p.ref) for p in patches]
    pos_a, pos_b, neg = [], [], {"intra": ([], []), "inter": ([], [])}
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
    positive = -_paired_distances(np.array(pos_a), np.array(pos_b), binary)
    groups, items, scores, labels = [], [], [], []
    for name in ("inter", "intra"):
        negative = -_paired_distances(np.array(neg[name][0]), np.array(neg[name][1]), binary)
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
                dist = _distances(d.ref, d.targets[k][z], binary)
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
        dist = _distances(described[s].ref[i : i + 1], pool_desc[z][rows], binary)[0]
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
    _check_descriptor(descriptor)
    _check_sequences(sequences)
    if len(sequences) < 2:
        raise InvalidInput("hpatches_tasks needs at least 2 sequences (for the negatives)")
    for what, value in (("n_patches", n_patches), ("n_queries", n_queries)):
        if value < 2:
            raise InvalidInput(f"{what} must be at least 2, got {value}")
    if n_distractors < 1:
        raise InvalidInput(f"n_distractors must be at least 1, got {n_distractors}")
    patches = _patches(sequences, n_patches, seed)
    used = [i for i, p in enumerate(patches) if len(p.ref) >= 2]
    if len(used) < 2:
        raise InvalidInput(
            "fewer than 2 sequences have at least 2 usable patches; use larger images"
        )
    sequences = [sequences[i] for i in used]
    patches = [patches[i] for i in used]
    described = _describe_sequences(sequences, patches, descriptor)
    binary = _is_binary(descriptor)
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


# --------------------------------------------------------------------------- keypoint matches


def _detector(descriptor: str, max_keypoints: int) -> Any:
    """The OpenCV object that detects and describes keypoints for ``descriptor``."""
    if descriptor in ("sift", "sift_weak"):
        return cv2.SIFT_create(nfeatures=max_keypoints)
    if descriptor == "orb":
        return cv2.ORB_create(nfeatures=max_keypoints)
    return _extractor(descriptor)


def _detect_and_describe(
    image: npt.NDArray[np.uint8], descriptor: str, max_keypoints: int, extractor: Any
) -> tuple[list[Any], np.ndarray | None]:
    """Each descriptor's own detector and descriptor, the ``max_keypoints`` strongest.

    The keypoints are sorted (strongest first, then by position) before they are described,
    so that the result does not depend on the order threads found them in.
    """
    kps = _sorted_keypoints(extractor.detect(image, None))[:max_keypoints]
    if not kps:
        return [], None
    kps, desc = extractor.compute(image, kps)
    if desc is None or len(kps) == 0:
        return [], None
    if descriptor == "sift_weak":
        desc = _weaken(desc)
    return list(kps), desc


def keypoint_matches(
    sequences: SequenceType[Sequence], descriptor: str, max_keypoints: int = 500
) -> tuple[Arrays, Arrays]:
    """Real keypoint matching of each reference with each of its targets.

    Keypoints are detected and described independently in the reference and in each target
    with the descriptor's own OpenCV detector (SIFT for ``sift_weak``), the strongest
    ``max_keypoints`` kept, then matched by brute force with mutual nearest neighbours
    (``cv2.BFMatcher(norm, crossCheck=True)``, L2 or Hamming).

    Returns:
        ``(matches, pairs)``: ``matches`` has ``pair_id`` (``<seq>/<k>``, k = 1..5), ``x0``,
        ``y0`` (reference), ``x1``, ``y1`` (target) and ``score`` = ``-distance``; ``pairs``
        has ``pair_id``, ``h11``..``h33`` (the true homography, reference -> target),
        ``width``, ``height`` (of the reference), ``sequence``, ``kind`` and ``target``.
        Ready for ``Store.ingest(matches, task="keypoints", pairs=pairs, ...)``.

    Raises:
        InvalidInput: unknown or unavailable descriptor, ``max_keypoints`` < 1.
    """
    _check_descriptor(descriptor)
    _check_sequences(sequences)
    if max_keypoints < 1:
        raise InvalidInput(f"max_keypoints must be at least 1, got {max_keypoints}")
    norm = cv2.NORM_HAMMING if _is_binary(descriptor) else cv2.NORM_L2
    matcher = cv2.BFMatcher(norm, crossCheck=True)
    extractor = _detector(descriptor, max_keypoints)
    cols: dict[str, list[np.ndarray]] = {
        k: [] for k in ("pair_id", "x0", "y0", "x1", "y1", "score")
    }
    pairs: dict[str, list[Any]] = {"pair_id": []}
    pairs.update({f"h{i}{j}": [] for i in (1, 2, 3) for j in (1, 2, 3)})
    pairs.update({k: [] for k in ("width", "height", "sequence", "kind", "target")})
    for seq in sequences:
        kp0, d0 = _detect_and_describe(seq.ref, descriptor, max_keypoints, extractor)
        p0 = np.array([k.pt for k in kp0], dtype=np.float64).reshape(-1, 2)
        for k, (image, h) in enumerate(zip(seq.targets, seq.homographies, strict=True)):
            pair_id = f"{seq.name}/{k + 1}"
            kp1, d1 = _detect_and_describe(image, descriptor, max_keypoints, extractor)
            p1 = np.array([kp.pt for kp in kp1], dtype=np.float64).reshape(-1, 2)
            found = [] if d0 is None or d1 is None else matcher.match(d0, d1)
            q = np.array([m.queryIdx for m in found], dtype=np.int64)
            t = np.array([m.trainIdx for m in found], dtype=np.int64)
            order = np.lexsort((p1[t, 1], p1[t, 0], p0[q, 1], p0[q, 0]))
            found = [found[j] for j in order]
            q, t = q[order], t[order]
            cols["pair_id"].append(np.full(q.size, pair_id))
            cols["x0"].append(p0[q, 0])
            cols["y0"].append(p0[q, 1])
            cols["x1"].append(p1[t, 0])
            cols["y1"].append(p1[t, 1])
            cols["score"].append(-np.array([m.distance for m in found], dtype=np.float64))
            hn = np.asarray(h, dtype=np.float64) / h[2, 2]
            pairs["pair_id"].append(pair_id)
            for i in range(3):
                for j in range(3):
                    pairs[f"h{i + 1}{j + 1}"].append(float(hn[i, j]))
            pairs["width"].append(seq.ref.shape[1])
            pairs["height"].append(seq.ref.shape[0])
            pairs["sequence"].append(seq.name)
            pairs["kind"].append(seq.kind)
            pairs["target"].append(str(k + 1))
    matches = {k: np.concatenate(v) for k, v in cols.items()}
    matches["pair_id"] = matches["pair_id"].astype(str)
    out_pairs = {k: np.array(v) for k, v in pairs.items()}
    for k in ("width", "height"):
        out_pairs[k] = out_pairs[k].astype(np.int64)
    return matches, out_pairs
