"""The demo's detectors: OpenCV's Hough circles and scikit-image's LoG, DoG and DoH blobs.

Each detector is a function ``(image, source) -> [(bbox, score, category), ...]`` on a grey
uint8 image of the image set ``source`` (``coins`` or ``hubble``, :mod:`.detection_data`),
whose parameters (the radius range, thresholds) it is tuned to, as a user tunes a detector to a
dataset; they are class-agnostic, so the category is the image set's one. Boxes are COCO
``[x, y, w, h]`` (pixel ``i`` spans ``[i, i + 1)``), the square around the circle or blob,
clipped to the image. Coins are detected at half resolution (coins are 15-40 px in radius, and
the filters' cost grows with sigma) and the boxes scaled back; hubble's 436 x 500 image at full.

- ``hough``: ``cv2.HoughCircles`` (``HOUGH_GRADIENT``) after a 5 x 5 Gaussian blur (sigma
  1.5); the score is the circle centre's accumulator votes, from
  ``cv2.HoughCirclesWithAccumulator``; where an OpenCV build lacks it, a stated proxy: ``n -
  rank`` in OpenCV's order, which is by decreasing votes. OpenCV reports centres as
  ``(cell + 0.5) * dp``, already in COCO's convention.
- ``log``, ``dog``: ``skimage.feature.blob_log`` and ``blob_dog``; radius ``sqrt(2) * sigma``.
- ``doh``: ``skimage.feature.blob_doh``; radius ``sigma``.

The blob scores are the filter's response at the blob's centre and sigma, computed with
Gaussian filters (scipy) on the image as float in [0, 1], over a window of 4 sigma + 2 px
around the centre: LoG ``-sigma^2 (Lxx + Lyy)``, as ``blob_log``'s cube; DoG ``(G(sigma) -
G(1.6 sigma)) * I / 0.6``, as ``blob_dog``'s; DoH ``sigma^4 (Lxx Lyy - Lxy^2)``, the
Gaussian-derivative determinant of the Hessian that ``blob_doh`` approximates with box filters.
skimage's blob centres are pixel indices, so ``+ 0.5``.

:func:`run_detector` runs one over a :func:`~evalstore.demo.detection_data.detection_dataset`
and returns the COCO results list. None of these detectors is random, so the seed is that of
a second exposure: each image gets Gaussian noise of sigma 2 grey levels drawn from ``(seed,
image id)`` before detection (seed ``None``: the image as is).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from evalstore.demo.detection_data import CATEGORIES, CATEGORY_OF, detection_dataset, image_pixels
from evalstore.errors import InvalidInput

__all__ = [
    "DETECTORS",
    "EXPOSURE_NOISE",
    "Detection",
    "blob_response",
    "detect_dog",
    "detect_doh",
    "detect_hough",
    "detect_log",
    "detection_dataset",
    "run_detector",
]

U8 = npt.NDArray[np.uint8]
#: ``([x, y, w, h], score, category name)``
Detection = tuple[list[float], float, str]

#: The second exposure's noise, grey levels (see the module docstring).
EXPOSURE_NOISE = 2.0

#: Per image set: the scale the detectors work at, and the radius range in the image's pixels
#: (coins: 18-32 px in the base image, 0.8-1.25 times that after augmentation).
_SETUP = {"coins": (0.5, 12.0, 42.0), "hubble": (1.0, 4.0, 20.0)}
_NAMES = {c["id"]: c["name"] for c in CATEGORIES}


def _setup(source: str) -> tuple[float, float, float]:
    if source not in _SETUP:
        raise InvalidInput(f"unknown detection image set {source!r}; known: {', '.join(_SETUP)}")
    return _SETUP[source]


def _at_scale(image: U8, scale: float) -> U8:
    import cv2

    if scale == 1.0:
        return image
    size = (max(1, round(image.shape[1] * scale)), max(1, round(image.shape[0] * scale)))
    return cv2.resize(image, size, interpolation=cv2.INTER_AREA)


def _box(cx: float, cy: float, radius: float, width: int, height: int) -> list[float]:
    """The square around a circle, clipped to the image, as COCO ``[x, y, w, h]``."""
    left, top = max(cx - radius, 0.0), max(cy - radius, 0.0)
    right, bottom = min(cx + radius, float(width)), min(cy + radius, float(height))
    return [left, top, right - left, bottom - top]


def blob_response(
    image: npt.NDArray[np.float64], row: int, col: int, sigma: float, kind: str
) -> float:
    """The ``kind`` (``log``, ``dog``, ``doh``) response at ``(row, col)`` and ``sigma`` of a
    float image, on a window around it (the module docstring has the formulas)."""
    from scipy import ndimage as ndi

    reach = math.ceil(4 * sigma * (1.6 if kind == "dog" else 1.0)) + 2
    r0, c0 = max(row - reach, 0), max(col - reach, 0)
    window = image[r0 : row + reach + 1, c0 : col + reach + 1]
    at = (row - r0, col - c0)
    if kind == "dog":
        dog = ndi.gaussian_filter(window, sigma) - ndi.gaussian_filter(window, 1.6 * sigma)
        return float(dog[at] / 0.6)
    lxx = ndi.gaussian_filter(window, sigma, order=(0, 2))[at]
    lyy = ndi.gaussian_filter(window, sigma, order=(2, 0))[at]
    if kind == "log":
        return float(-(sigma**2) * (lxx + lyy))
    if kind == "doh":
        lxy = ndi.gaussian_filter(window, sigma, order=(1, 1))[at]
        return float(sigma**4 * (lxx * lyy - lxy**2))
    raise InvalidInput(f"unknown blob response {kind!r}; known: log, dog, doh")


def detect_hough(image: U8, source: str) -> list[Detection]:
    """Circles of OpenCV's Hough gradient method, scored by their accumulator votes."""
    import cv2

    scale, r_min, r_max = _setup(source)
    small = cv2.GaussianBlur(_at_scale(image, scale), (5, 5), 1.5)
    # centres at least a smallest radius apart; Canny's high threshold 100; at least 20 votes
    # (12 on hubble, whose circles are small)
    args = (small, cv2.HOUGH_GRADIENT, 1, max(r_min * scale, 3.0))
    options = {
        "param1": 100,
        "param2": 20 if source == "coins" else 12,
        "minRadius": max(int(r_min * scale), 1),
        "maxRadius": math.ceil(r_max * scale),
    }
    with_votes = getattr(cv2, "HoughCirclesWithAccumulator", None)
    found = (with_votes or cv2.HoughCircles)(*args, **options)
    if found is None:
        return []
    circles = np.asarray(found, dtype=np.float64).reshape(-1, found.shape[-1])
    height, width = image.shape
    out = []
    for rank, circle in enumerate(circles):
        votes = float(circle[3]) if with_votes is not None else float(len(circles) - rank)
        box = _box(circle[0] / scale, circle[1] / scale, circle[2] / scale, width, height)
        if box[2] > 0 and box[3] > 0:
            out.append((box, votes, _NAMES[CATEGORY_OF[source]]))
    return out


def _blobs(image: U8, source: str, kind: str) -> list[Detection]:
    from skimage import feature

    scale, r_min, r_max = _setup(source)
    values = _at_scale(image, scale).astype(np.float64) / 255.0
    per_radius = 1.0 if kind == "doh" else math.sqrt(2.0)
    s_min, s_max = r_min * scale / per_radius, r_max * scale / per_radius
    if kind == "log":
        blobs = feature.blob_log(values, s_min, s_max, num_sigma=8, threshold=0.05)
    elif kind == "dog":
        blobs = feature.blob_dog(values, s_min, s_max, threshold=0.05)
    else:
        blobs = feature.blob_doh(values, s_min, s_max, num_sigma=8, threshold=0.002)
    height, width = image.shape
    out = []
    for row, col, sigma in np.asarray(blobs, dtype=np.float64):
        score = blob_response(values, int(row), int(col), float(sigma), kind)
        cx, cy = (col + 0.5) / scale, (row + 0.5) / scale
        box = _box(cx, cy, per_radius * sigma / scale, width, height)
        if box[2] > 0 and box[3] > 0:
            out.append((box, score, _NAMES[CATEGORY_OF[source]]))
    return out


def detect_log(image: U8, source: str) -> list[Detection]:
    """scikit-image's Laplacian-of-Gaussian blobs (8 sigmas), scored by the LoG response."""
    return _blobs(image, source, "log")


def detect_dog(image: U8, source: str) -> list[Detection]:
    """scikit-image's difference-of-Gaussian blobs, scored by the DoG response."""
    return _blobs(image, source, "dog")


def detect_doh(image: U8, source: str) -> list[Detection]:
    """scikit-image's determinant-of-Hessian blobs (8 sigmas), scored by the DoH response."""
    return _blobs(image, source, "doh")


DETECTORS: dict[str, Callable[[U8, str], list[Detection]]] = {
    "hough": detect_hough,
    "log": detect_log,
    "dog": detect_dog,
    "doh": detect_doh,
}


def run_detector(name: str, dataset: dict[str, Any], seed: int | None) -> list[dict[str, Any]]:
    """The COCO results list of detector ``name`` over ``dataset`` (a
    :func:`detection_dataset`), each image seen with the second exposure of ``seed``."""
    if name not in DETECTORS:
        raise InvalidInput(f"unknown detector {name!r}; known: {', '.join(DETECTORS)}")
    detect = DETECTORS[name]
    ids = {c["name"]: c["id"] for c in dataset["categories"]}
    results: list[dict[str, Any]] = []
    for record in dataset["images"]:
        pixels = image_pixels(record)
        if seed is not None:
            noise = np.random.default_rng([seed, record["id"]]).standard_normal(pixels.shape)
            noisy = pixels.astype(np.float64) + EXPOSURE_NOISE * noise
            pixels = np.clip(np.rint(noisy), 0, 255).astype(np.uint8)
        for box, score, category in detect(pixels, record["source"]):
            results.append(
                {
                    "image_id": record["id"],
                    "category_id": ids[category],
                    "bbox": box,
                    "score": score,
                }
            )
    return results
