"""HPatches-like image sequences from the photographs bundled with scikit-image.

:func:`make_sequences` makes HPatches-like sequences: a reference image and 5 targets, ``v_*``
(viewpoint: the targets are the photograph seen through increasingly strong random
homographies) or ``i_*`` (illumination: same geometry, increasingly strong photometric
changes), each target with its true homography ``H`` (``x_t ~ H x_ref``).

Images come from ``skimage.data`` (bundled with scikit-image, no download): scikit-image is
imported only by :func:`make_sequences`, and OpenCV only when a function needs it;
:func:`check_sequences` checks sequences made elsewhere. Everything is deterministic for a given
seed. No function here touches a database or prints.
"""

from __future__ import annotations

import math
from collections.abc import Sequence as SequenceType
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from evalstore.errors import InvalidInput

__all__ = ["KINDS", "N_TARGETS", "PHOTOS", "Sequence", "check_sequences", "make_sequences"]

KINDS = ("viewpoint", "illumination")

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

N_TARGETS = 5

_WORLD = 1.4  # the photograph is this much larger than the reference crop (content to see)
_MAX_ROTATION = 30.0  # degrees, at the last target
_MAX_ZOOM_IN, _MAX_ZOOM_OUT = 1.3, 0.7
_MAX_PERSPECTIVE = 0.3  # |h31|, |h32| * longer side / 2, at the last target
_MAX_SHIFT = 0.05  # translation, fraction of the image side, at the last target

FloatArray = npt.NDArray[np.float64]


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


def _load_photo(name: str) -> npt.NDArray[np.uint8]:
    """A bundled scikit-image photograph as grayscale uint8."""
    import cv2
    from skimage import data  # the demo extra; imported here only

    image = np.asarray(getattr(data, name)())
    if image.ndim == 3:
        image = cv2.cvtColor(np.ascontiguousarray(image[..., :3]), cv2.COLOR_RGB2GRAY)
    return np.ascontiguousarray(image, dtype=np.uint8)


def _resize(image: npt.NDArray[np.uint8], width: int, height: int) -> npt.NDArray[np.uint8]:
    import cv2

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
    import cv2

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
    import cv2

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


def check_sequences(sequences: SequenceType[Sequence]) -> None:
    """Refuse sequences with the same name, or without 5 targets and 5 homographies each.

    Raises:
        InvalidInput: naming the sequence.
    """
    names = [s.name for s in sequences]
    if len(set(names)) != len(names):
        raise InvalidInput(f"sequence names must be distinct, got {names}")
    for s in sequences:
        if len(s.targets) != N_TARGETS or len(s.homographies) != N_TARGETS:
            raise InvalidInput(f"sequence {s.name}: expected {N_TARGETS} targets and homographies")
