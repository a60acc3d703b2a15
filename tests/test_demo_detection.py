"""The demo's detection data: ground truth, exact augmentations, detectors, COCO evaluation.

Fast tests use synthetic images and boxes; the ones that load and segment the real images
(about 1.5 s of imports and segmentation on first use) or run the detectors are slow.
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

import numpy as np
import pytest
from scipy import ndimage as ndi

from evalstore.demo.detection import DETECTORS, blob_response, run_detector
from evalstore.demo.detection_data import (
    Augmentation,
    base_truth,
    detection_dataset,
    draw_augmentation,
    image_pixels,
    transform_boxes,
    transform_image,
)
from evalstore.errors import InvalidInput


def _random_boxes(rng: np.random.Generator, width: int, height: int, n: int) -> np.ndarray:
    x = rng.integers(0, width - 1, n)
    y = rng.integers(0, height - 1, n)
    w = rng.integers(1, width - x + 1)
    h = rng.integers(1, height - y + 1)
    return np.stack([x, y, w, h], axis=1).astype(np.float64)


def _label_image(rng: np.random.Generator, width: int, height: int, n: int) -> np.ndarray:
    """Non-overlapping discs labelled 1..n (some may be cut by the image border)."""
    labels = np.zeros((height, width), dtype=np.int32)
    rows, cols = np.mgrid[:height, :width]
    for i in range(1, n + 1):
        r = rng.uniform(3, 12)
        cy, cx = rng.uniform(0, height), rng.uniform(0, width)
        disc = ((rows - cy) ** 2 + (cols - cx) ** 2 <= r * r) & (labels == 0)
        labels[disc] = i
    return labels


def _boxes_of(labels: np.ndarray, n: int) -> np.ndarray:
    boxes = np.full((n, 4), np.nan)
    for i, found in enumerate(ndi.find_objects(labels, max_label=n)):
        if found is not None:
            rows, cols = found
            boxes[i] = (cols.start, rows.start, cols.stop - cols.start, rows.stop - rows.start)
    return boxes


def _flip_back(aug: Augmentation, width: int, height: int) -> Augmentation:
    return Augmentation(
        crop=(0, 0, width, height), size=(width, height), flip_h=aug.flip_h, flip_v=aug.flip_v
    )


@pytest.mark.parametrize("flip", [(True, False), (False, True), (True, True)])
def test_a_flip_twice_is_the_identity(flip: tuple[bool, bool]) -> None:
    rng = np.random.default_rng(1)
    width, height = 37, 23
    boxes = _random_boxes(rng, width, height, 50)
    image = rng.integers(0, 256, (height, width), dtype=np.uint8)
    aug = Augmentation(
        crop=(0, 0, width, height), size=(width, height), flip_h=flip[0], flip_v=flip[1]
    )
    once = transform_boxes(boxes, aug)
    assert not np.array_equal(once, boxes)
    assert np.array_equal(transform_boxes(once, _flip_back(aug, width, height)), boxes)
    flipped = transform_image(image, aug)
    assert not np.array_equal(flipped, image)
    assert np.array_equal(transform_image(flipped, aug), image)


def test_four_quarter_turns_are_the_identity_and_one_turns_the_box() -> None:
    rng = np.random.default_rng(2)
    width, height = 31, 19
    boxes = _random_boxes(rng, width, height, 40)
    turned, size = boxes, (width, height)
    for _ in range(4):
        turned = transform_boxes(turned, Augmentation(crop=(0, 0, *size), size=size, rot90=1))
        size = (size[1], size[0])
    assert np.array_equal(turned, boxes)
    # one quarter turn counter-clockwise: the top-left pixel goes to the bottom-left
    one = transform_boxes(
        np.array([[0.0, 0.0, 1.0, 1.0]]),
        Augmentation(crop=(0, 0, width, height), size=(width, height), rot90=1),
    )
    assert one.tolist() == [[0.0, width - 1.0, 1.0, 1.0]]


@pytest.mark.parametrize("seed", range(6))
def test_a_box_holds_its_pixels_under_the_transform(seed: int) -> None:
    """Label pixels, moved by the same augmentation (nearest neighbour), have their centres in
    the moved box; without a scale, an object the crop does not cut has for moved box exactly its
    moved pixels' bounding box (a cut one has the box clipped to the crop)."""
    rng = np.random.default_rng(seed)
    width, height, n = 90, 70, 12
    labels = _label_image(rng, width, height, n)
    boxes = _boxes_of(labels, n)
    present = ~np.isnan(boxes[:, 0])
    checked = 0
    for scaled in (False, True):
        aug = draw_augmentation(rng, width, height)
        if not scaled:
            aug = Augmentation(**{**aug.__dict__, "size": aug.crop[2:]})
        moved = transform_boxes(boxes[present], aug)
        out = transform_image(labels, aug, labels=True)
        for box, label in zip(moved, np.flatnonzero(present) + 1, strict=True):
            rows, cols = np.nonzero(out == label)
            if len(rows) == 0:  # outside the crop, or a box corner without disc pixels
                continue
            x, y, w, h = box
            assert np.all((cols + 0.5 >= x) & (cols + 0.5 <= x + w)), (seed, label, aug)
            assert np.all((rows + 0.5 >= y) & (rows + 0.5 <= y + h)), (seed, label, aug)
            x0, y0, crop_w, crop_h = aug.crop
            bx, by, bw, bh = boxes[label - 1]
            whole = x0 <= bx and y0 <= by and bx + bw <= x0 + crop_w and by + bh <= y0 + crop_h
            if not whole:
                continue
            checked += 1
            tight = [
                cols.min(),
                rows.min(),
                cols.max() + 1 - cols.min(),
                rows.max() + 1 - rows.min(),
            ]
            if scaled:  # nearest neighbour: within a pixel of each side
                assert np.all(np.abs(np.array(tight) - box) <= 2.0), (seed, label, aug)
            else:
                assert box.tolist() == [float(v) for v in tight], (seed, label, aug)
    assert checked >= 6


def test_augmentation_records_round_trip_and_the_image_follows_its_record() -> None:
    aug = draw_augmentation(np.random.default_rng(5), 60, 40)
    assert Augmentation.from_record(aug.record()) == aug
    image = np.random.default_rng(6).integers(0, 256, (40, 60), dtype=np.uint8)
    out = transform_image(image, aug)
    assert out.dtype == np.uint8
    assert out.shape == (aug.size[1], aug.size[0])[:: 1 if aug.rot90 % 2 == 0 else -1]
    assert np.array_equal(out, transform_image(image, aug))


def test_blob_response_on_a_window_equals_the_full_image_filter() -> None:
    rng = np.random.default_rng(7)
    image = ndi.gaussian_filter(rng.random((80, 90)), 1.0)
    for row, col, sigma in [(40, 45, 3.0), (5, 7, 2.0), (70, 85, 4.5)]:
        log = -(sigma**2) * ndi.gaussian_laplace(image, sigma)[row, col]
        assert blob_response(image, row, col, sigma, "log") == pytest.approx(log, abs=1e-12)
        dog = (ndi.gaussian_filter(image, sigma) - ndi.gaussian_filter(image, 1.6 * sigma))[
            row, col
        ]
        assert blob_response(image, row, col, sigma, "dog") == pytest.approx(dog / 0.6, abs=1e-12)
        lxx = ndi.gaussian_filter(image, sigma, order=(0, 2))[row, col]
        lyy = ndi.gaussian_filter(image, sigma, order=(2, 0))[row, col]
        lxy = ndi.gaussian_filter(image, sigma, order=(1, 1))[row, col]
        doh = sigma**4 * (lxx * lyy - lxy**2)
        assert blob_response(image, row, col, sigma, "doh") == pytest.approx(doh, abs=1e-12)


def test_bad_requests_name_the_mistake() -> None:
    with pytest.raises(InvalidInput, match="unknown detector 'yolo'"):
        run_detector("yolo", {"images": [], "categories": []}, 0)
    with pytest.raises(InvalidInput, match="n_augment must be 0 or more"):
        detection_dataset(0, -1)
    with pytest.raises(InvalidInput, match="unknown source"):
        image_pixels({"id": 3, "source": "moon", "augmentation": {}})


# -- the real images (slow: scikit-image's imports and the segmentation) -----------------------


@pytest.mark.slow
def test_the_ground_truth_counts_and_boxes() -> None:
    image, labels, boxes, areas = base_truth("coins")
    assert image.shape == (303, 384) and len(boxes) == 24 == labels.max()
    assert areas.min() > 900  # no speck survived: the smallest coin is about 1,100 px
    hubble, hubble_labels, hubble_boxes, hubble_areas = base_truth("hubble")
    assert hubble.shape == (436, 500) and len(hubble_boxes) == hubble_labels.max() > 30
    assert hubble_areas.min() >= 40
    for found_labels, found_boxes, found_areas in [
        (labels, boxes, areas),
        (hubble_labels, hubble_boxes, hubble_areas),
    ]:
        assert np.array_equal(_boxes_of(found_labels, len(found_boxes)), found_boxes)
        assert np.all(found_areas <= found_boxes[:, 2] * found_boxes[:, 3])


@pytest.mark.slow
def test_the_dataset_boxes_lie_in_their_images_and_the_seed_fixes_everything() -> None:
    dataset = detection_dataset(3, 4)
    assert len(dataset["images"]) == 10
    assert [i["id"] for i in dataset["images"]] == list(range(1, 11))
    sizes = {i["id"]: (i["width"], i["height"]) for i in dataset["images"]}
    for record in dataset["images"]:
        assert image_pixels(record).shape == (record["height"], record["width"])
    assert len({a["id"] for a in dataset["annotations"]}) == len(dataset["annotations"])
    for ann in dataset["annotations"]:
        x, y, w, h = ann["bbox"]
        width, height = sizes[ann["image_id"]]
        assert x >= 0 and y >= 0 and w > 0 and h > 0 and x + w <= width and y + h <= height
        assert 0 < ann["area"] <= w * h * (1 + 1e-9) and ann["iscrowd"] == 0
    assert sum(a["image_id"] == 1 for a in dataset["annotations"]) == 24
    assert detection_dataset(3, 4) == dataset
    assert detection_dataset(4, 4) != dataset
    assert detection_dataset(3, 2)["images"][:3] == dataset["images"][:3]


def _coco_ap(dataset: dict[str, Any], results: list[dict[str, Any]], category: int) -> float:
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()):
        truth = COCO()
        truth.dataset = dataset
        truth.createIndex()
        evaluation = COCOeval(truth, truth.loadRes(results), "bbox")
        evaluation.params.catIds = [category]
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    return float(evaluation.stats[0])


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_detectors_evaluate_under_pycocotools_in_a_stable_order(seed: int) -> None:
    """Observed on seeds 0-2 with 2 and 4 augmentations: on coins Hough > LoG > DoH > DoG
    (AP about .68, .50, .31, .11), on hubble DoH > LoG > DoG > Hough (.13, .08, .06, .01)."""
    dataset = detection_dataset(seed, 2)
    ap = {}
    for name in DETECTORS:
        results = run_detector(name, dataset, seed)
        assert results, name
        ap[name] = (_coco_ap(dataset, results, 1), _coco_ap(dataset, results, 2))
    for coins, hubble in ap.values():
        assert 0 < coins <= 1 and 0 < hubble <= 1
    assert ap["hough"][0] > ap["log"][0] > ap["doh"][0] > ap["dog"][0] > 0.05
    assert ap["doh"][1] > ap["log"][1] > ap["dog"][1] > ap["hough"][1]
    assert ap["hough"][0] > 0.5 and ap["doh"][1] > 0.05


@pytest.mark.slow
def test_a_detector_run_is_fixed_by_its_seed() -> None:
    dataset = detection_dataset(0, 1)
    dataset["images"] = dataset["images"][1:3]  # an augmented coins image and the hubble one
    for name in DETECTORS:
        first = run_detector(name, dataset, 0)
        assert run_detector(name, dataset, 0) == first, name
        assert run_detector(name, dataset, 1) != first, name
        for det in first:
            record = next(i for i in dataset["images"] if i["id"] == det["image_id"])
            x, y, w, h = det["bbox"]
            assert x >= 0 and y >= 0 and w > 0 and h > 0
            assert x + w <= record["width"] + 1e-9 and y + h <= record["height"] + 1e-9
            assert det["category_id"] == (1 if record["source"] == "coins" else 2)
