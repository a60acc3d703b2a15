"""The demo's detection images and their ground truth, as a COCO annotation dict.

Two image sets bundled with scikit-image (``skimage.data``, no download), each with ground truth
made by a deterministic segmentation:

- ``coins`` (303 x 384, grey): 24 coins, category ``coin``. The segmentation is region-based
  (scikit-image's coins tutorial): the elevation map is the Sobel gradient magnitude; pixels
  below grey level 30 are marked background and above 150 coin (the two modes of the
  histogram, dark felt and bright metal); a watershed of the elevation from these markers
  separates coins from background; holes are filled and components of 64 px or fewer dropped
  (one 2-px speck); touching coins would then be split by a watershed of the negated distance
  transform from its peaks (at least 12 px apart and 8 px inside the coin), which here splits
  none. One box per coin: the bounding box of its pixels; its area is its pixel count (COCO's
  segmentation area). The count, 24, is checked by a test.
- ``hubble`` (scikit-image's ``hubble_deep_field``, 872 x 1000 RGB): the luminance (OpenCV's
  RGB -> grey) is halved to 436 x 500 (area averaging, so the detectors run in a fraction of a
  second) and smoothed by a Gaussian of sigma 1 px. The background level and noise are the
  median and 1.4826 x the median absolute deviation of that image (robust to the sources, which
  cover a few percent of it): about 13.4 and 2.15 grey levels. A pixel is part of a source
  where it is 15 noise sigmas above background: a brighter isophote than the 3-5 sigmas of a
  faint-source catalogue, so that a box spans a source's visible body rather than its faint
  halo, which no circle or blob detector reports (at 5 sigmas the boxes are about 1.6 times
  the blob radii and no detector reaches an AP50 of 0.1). Sources are deblended like
  SExtractor's contrast rule: every peak that stands 10 sigmas above the saddle to any higher
  peak (scikit-image's ``h_maxima``) seeds a watershed of the negated luminance inside that
  mask. A source is kept when its peak is 60 sigmas above background (the bright sources,
  clearly visible to the eye; there are 70, so COCO's 100 detections per image can
  find them all) and it covers at least 40 px. One category, ``source``: a star/galaxy rule
  from shape on an 8-bit JPEG would mislabel compact galaxies (the field has only a handful of
  stars), so none is claimed. No crowd regions.

Augmentations, drawn from a seed: a crop (each side 70-100% of the image), a scale (0.8-1.25,
then rounded to whole pixels), a horizontal and a vertical flip (each with probability 1/2), a
rotation by a multiple of 90 degrees, a contrast (0.75-1.25, about grey 128) and brightness
(-25 to +25 grey levels) change and Gaussian noise (sigma 0-6 grey levels, its own seed). The
boxes are transformed exactly, not re-segmented: clipped to the crop, scaled by the output size
over the crop size, flipped and rotated; an object is kept when at least half of its pixels are
inside the crop, its area is those pixels times the scale's area factor. Box coordinates are
COCO's: pixel ``i`` spans ``[i, i + 1)``.

:func:`detection_dataset` returns the COCO annotation dict; each image record also holds its
``source`` and ``augmentation``, from which :func:`image_pixels` remakes its pixels exactly.
scikit-image and OpenCV are imported when a function needs them. Nothing here prints or
touches a database.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from evalstore.errors import InvalidInput

__all__ = [
    "CATEGORIES",
    "CATEGORY_OF",
    "HUBBLE_EXTENT",
    "SOURCES",
    "Augmentation",
    "base_truth",
    "detection_dataset",
    "draw_augmentation",
    "image_pixels",
    "transform_boxes",
    "transform_image",
]

#: The image sets, in image-id order, and each one's category.
SOURCES = ("coins", "hubble")
#: COCO categories: one per image set, and the set of each.
CATEGORIES: tuple[dict[str, Any], ...] = (
    {"id": 1, "name": "coin"},
    {"id": 2, "name": "source"},
)
CATEGORY_OF = {"coins": 1, "hubble": 2}
#: A source's extent: where the smoothed luminance is this many noise sigmas above background.
HUBBLE_EXTENT = 15.0

U8 = npt.NDArray[np.uint8]
Labels = npt.NDArray[np.int32]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Augmentation:
    """One augmentation of a base image, in the order it is applied.

    ``crop`` is ``(x0, y0, width, height)`` in the base image; ``size`` the ``(width, height)``
    it is resized to; then the flips, ``rot90`` quarter turns counter-clockwise (as
    ``np.rot90``), and ``contrast * (v - 128) + 128 + brightness`` plus Gaussian noise of
    ``noise_sigma`` drawn from ``noise_seed``, rounded and clipped to uint8."""

    crop: tuple[int, int, int, int]
    size: tuple[int, int]
    flip_h: bool = False
    flip_v: bool = False
    rot90: int = 0
    contrast: float = 1.0
    brightness: float = 0.0
    noise_sigma: float = 0.0
    noise_seed: int = 0

    @classmethod
    def identity(cls, width: int, height: int) -> Augmentation:
        return cls(crop=(0, 0, width, height), size=(width, height))

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Augmentation:
        values = dict(record)
        values["crop"] = tuple(values["crop"])
        values["size"] = tuple(values["size"])
        return cls(**values)

    def record(self) -> dict[str, Any]:
        values = asdict(self)
        values["crop"] = list(self.crop)
        values["size"] = list(self.size)
        return values


def _segment_coins(image: U8) -> Labels:
    from scipy import ndimage as ndi
    from skimage import feature, filters, segmentation

    elevation = filters.sobel(image)
    markers = np.zeros(image.shape, dtype=np.int32)
    markers[image < 30] = 1
    markers[image > 150] = 2
    coins = ndi.binary_fill_holes(segmentation.watershed(elevation, markers) == 2)
    components, _ = ndi.label(coins)
    small = np.bincount(components.ravel()) <= 64  # by hand: remove_small_objects' API moved
    small[0] = False
    coins[small[components]] = False
    components, _ = ndi.label(coins)
    distance = ndi.distance_transform_edt(coins)
    peaks = feature.peak_local_max(
        distance, min_distance=12, threshold_abs=8, labels=components, exclude_border=False
    )
    seeds = np.zeros(image.shape, dtype=np.int32)
    seeds[tuple(peaks.T)] = np.arange(1, len(peaks) + 1)
    return np.asarray(segmentation.watershed(-distance, seeds, mask=coins), dtype=np.int32)


def _segment_hubble(image: U8) -> Labels:
    from scipy import ndimage as ndi
    from skimage import morphology, segmentation

    smooth = ndi.gaussian_filter(image.astype(np.float64), 1.0)
    background = float(np.median(smooth))
    noise = 1.4826 * float(np.median(np.abs(smooth - background)))
    mask = smooth > background + HUBBLE_EXTENT * noise
    peaks = morphology.h_maxima(smooth, 10 * noise).astype(bool)
    seeds, _ = ndi.label(peaks & (smooth > background + 60 * noise))
    labels = np.asarray(segmentation.watershed(-smooth, seeds, mask=mask), dtype=np.int32)
    areas = np.bincount(labels.ravel())
    small = areas < 40
    small[0] = True
    labels[small[labels]] = 0
    return labels


@functools.cache
def _base(source: str) -> tuple[U8, Labels]:
    """The base image (grey uint8) and its label image (0 background, 1..n objects)."""
    import cv2
    from skimage import data  # the demo extra; imported here only

    if source == "coins":
        image = np.ascontiguousarray(data.coins(), dtype=np.uint8)
        labels = _segment_coins(image)
    elif source == "hubble":
        grey = cv2.cvtColor(np.ascontiguousarray(data.hubble_deep_field()), cv2.COLOR_RGB2GRAY)
        image = cv2.resize(grey, (500, 436), interpolation=cv2.INTER_AREA)
        labels = _segment_hubble(image)
    else:
        raise InvalidInput(f"unknown detection image set {source!r}; known: {', '.join(SOURCES)}")
    # renumber the objects 1..n (the watershed leaves gaps where small objects were dropped)
    present = np.unique(labels)
    present = present[present > 0]
    renumber = np.zeros(int(labels.max()) + 1, dtype=np.int32)
    renumber[present] = np.arange(1, len(present) + 1, dtype=np.int32)
    image.setflags(write=False)
    labels = renumber[labels]
    labels.setflags(write=False)
    return image, labels


def base_truth(source: str) -> tuple[U8, Labels, FloatArray, FloatArray]:
    """``(image, labels, boxes, areas)`` of a base image: ``boxes`` (n, 4) COCO ``[x, y, w,
    h]`` of object ``i + 1`` of ``labels``, ``areas`` its pixel counts."""
    from scipy import ndimage as ndi

    image, labels = _base(source)
    n = int(labels.max())
    boxes = np.zeros((n, 4))
    for i, found in enumerate(ndi.find_objects(labels)):
        if found is None:
            continue
        rows, cols = found
        boxes[i] = (cols.start, rows.start, cols.stop - cols.start, rows.stop - rows.start)
    areas = np.bincount(labels.ravel(), minlength=n + 1)[1:].astype(np.float64)
    return image, labels, boxes, areas


def draw_augmentation(rng: np.random.Generator, width: int, height: int) -> Augmentation:
    """One random augmentation of a ``width`` x ``height`` image (the ranges above)."""
    crop_w = round(width * rng.uniform(0.7, 1.0))
    crop_h = round(height * rng.uniform(0.7, 1.0))
    x0 = int(rng.integers(0, width - crop_w + 1))
    y0 = int(rng.integers(0, height - crop_h + 1))
    scale = rng.uniform(0.8, 1.25)
    return Augmentation(
        crop=(x0, y0, crop_w, crop_h),
        size=(max(1, round(crop_w * scale)), max(1, round(crop_h * scale))),
        flip_h=bool(rng.random() < 0.5),
        flip_v=bool(rng.random() < 0.5),
        rot90=int(rng.integers(0, 4)),
        contrast=float(rng.uniform(0.75, 1.25)),
        brightness=float(rng.uniform(-25.0, 25.0)),
        noise_sigma=float(rng.uniform(0.0, 6.0)),
        noise_seed=int(rng.integers(0, 2**31)),
    )


def transform_image(image: npt.NDArray[Any], aug: Augmentation, *, labels: bool = False) -> Any:
    """``image`` under ``aug``; ``labels=True`` for a label image (nearest neighbour, pixel
    centres, no photometric change), else the photometric change and noise follow."""
    import cv2

    x0, y0, w, h = aug.crop
    out = np.ascontiguousarray(image[y0 : y0 + h, x0 : x0 + w])
    if aug.size != (w, h):
        if labels:
            interpolation = cv2.INTER_NEAREST_EXACT
            out = cv2.resize(out.astype(np.int32), aug.size, interpolation=interpolation)
        else:
            shrink = aug.size[0] * aug.size[1] < w * h
            interpolation = cv2.INTER_AREA if shrink else cv2.INTER_LINEAR
            out = cv2.resize(out, aug.size, interpolation=interpolation)
    if aug.flip_h:
        out = out[:, ::-1]
    if aug.flip_v:
        out = out[::-1, :]
    out = np.ascontiguousarray(np.rot90(out, aug.rot90))
    if labels:
        return out
    values = aug.contrast * (out.astype(np.float64) - 128.0) + 128.0 + aug.brightness
    if aug.noise_sigma > 0:
        noise = np.random.default_rng(aug.noise_seed).standard_normal(values.shape)
        values += aug.noise_sigma * noise
    return np.clip(np.rint(values), 0, 255).astype(np.uint8)


def transform_boxes(boxes: FloatArray, aug: Augmentation) -> FloatArray:
    """COCO boxes ``[x, y, w, h]`` (n, 4) of the base image under ``aug``'s geometry:
    clipped to the crop (a box outside it gets width or height 0), scaled, flipped, rotated."""
    x0, y0, crop_w, crop_h = aug.crop
    width, height = aug.size
    left = np.clip(boxes[:, 0] - x0, 0, crop_w) * (width / crop_w)
    top = np.clip(boxes[:, 1] - y0, 0, crop_h) * (height / crop_h)
    right = np.clip(boxes[:, 0] + boxes[:, 2] - x0, 0, crop_w) * (width / crop_w)
    bottom = np.clip(boxes[:, 1] + boxes[:, 3] - y0, 0, crop_h) * (height / crop_h)
    if aug.flip_h:
        left, right = width - right, width - left
    if aug.flip_v:
        top, bottom = height - bottom, height - top
    for _ in range(aug.rot90 % 4):
        # a quarter turn counter-clockwise: (x, y) -> (y, width - x); the width becomes height
        left, top, right, bottom = top, width - right, bottom, width - left
        width, height = height, width
    return np.stack([left, top, right - left, bottom - top], axis=1)


def image_pixels(record: dict[str, Any]) -> U8:
    """The pixels (grey uint8) of an image record of :func:`detection_dataset`."""
    source = record.get("source")
    if source not in SOURCES:
        raise InvalidInput(f"image {record.get('id')}: unknown source {source!r}")
    image, _ = _base(source)
    return transform_image(image, Augmentation.from_record(record["augmentation"]))


def detection_dataset(seed: int, n_augment: int) -> dict[str, Any]:
    """The COCO annotation dict of both image sets: each base image (augmentation 0, the
    identity) and ``n_augment`` augmentations of it drawn from ``seed``.

    Image ids are 1.. in order (``coins`` first), file names ``<set>_s<seed>_a<k>.png``
    (``k = 0`` is the base image); annotations carry ``bbox``, ``area`` and ``iscrowd`` 0."""
    if n_augment < 0:
        raise InvalidInput(f"n_augment must be 0 or more, not {n_augment}")
    images: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    for index, source in enumerate(SOURCES):
        image, labels, boxes, areas = base_truth(source)
        height, width = image.shape
        rng = np.random.default_rng([seed, index])
        augs = [Augmentation.identity(width, height)]
        augs += [draw_augmentation(rng, width, height) for _ in range(n_augment)]
        for k, aug in enumerate(augs):
            x0, y0, crop_w, crop_h = aug.crop
            inside = np.bincount(
                labels[y0 : y0 + crop_h, x0 : x0 + crop_w].ravel(), minlength=len(areas) + 1
            )[1:]
            moved = transform_boxes(boxes, aug)
            factor = (aug.size[0] / crop_w) * (aug.size[1] / crop_h)
            out_w, out_h = aug.size if aug.rot90 % 2 == 0 else aug.size[::-1]
            image_id = len(images) + 1
            images.append(
                {
                    "id": image_id,
                    "width": out_w,
                    "height": out_h,
                    "file_name": f"{source}_s{seed}_a{k}.png",
                    "source": source,
                    "augmentation": aug.record(),
                }
            )
            for i in range(len(areas)):
                if 2 * inside[i] < areas[i] or moved[i, 2] <= 0 or moved[i, 3] <= 0:
                    continue
                annotations.append(
                    {
                        "id": len(annotations) + 1,
                        "image_id": image_id,
                        "category_id": CATEGORY_OF[source],
                        "bbox": [float(v) for v in moved[i]],
                        "area": float(inside[i] * factor),
                        "iscrowd": 0,
                    }
                )
    return {
        "info": {"description": f"evalstore demo detection images, seed {seed}"},
        "images": images,
        "categories": [dict(c) for c in CATEGORIES],
        "annotations": annotations,
    }
