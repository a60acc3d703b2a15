"""Tests of evalstore.core.geometry and evalstore.core.matching, the NumPy reference of the
geometric matching metrics.

Hand-worked examples (the arithmetic is in the comments), the edge cases that docs/metrics.md
("Geometric matching metrics") names (a distance exactly on sigma, zero disparity, missing
homographies, pairs without matches), and the vectorised per-pair code against a plain Python
loop per pair.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstore.core.geometry import (
    check_homography,
    estimate_homography,
    ground_truth_from_disparity,
    ground_truth_from_homography,
    invert_homography,
    sample_disparity,
    transfer,
)
from evalstore.core.matching import (
    corner_error,
    homography_accuracy,
    iou,
    iou_macro,
    iou_micro,
    match_distance,
    mma,
    precision_at_sigma,
    reprojection_error,
)
from evalstore.errors import InvalidInput

NAN = math.nan
SHIFT = np.array([[1.0, 0.0, 5.0], [0.0, 1.0, -3.0], [0.0, 0.0, 1.0]])  # tx = 5, ty = -3
#: A general homography (projective last row) for estimation tests.
H_GENERAL = np.array([[1.1, 0.02, 5.0], [0.01, 0.95, -3.0], [1e-4, 2e-4, 1.0]])


# ----------------------------------------------------------------------------- transfer


def test_translation_ground_truth_is_the_shifted_points():
    # (1, 1) -> (1 + 5, 1 - 3) = (6, -2); (10, 20) -> (15, 17); w = 0*x + 0*y + 1 = 1.
    gx, gy = ground_truth_from_homography(SHIFT, [1.0, 10.0], [1.0, 20.0])
    assert gx.tolist() == [6.0, 15.0]
    assert gy.tolist() == [-2.0, 17.0]


def test_transfer_projective_by_hand():
    # H = [[2, 0, 1], [0, 1, 0], [0, 1, 1]] at (1, 1): w = 0 + 1 + 1 = 2,
    # x' = (2 + 0 + 1) / 2 = 1.5, y' = (0 + 1 + 0) / 2 = 0.5.
    h = np.array([[2.0, 0.0, 1.0], [0.0, 1.0, 0.0], [0.0, 1.0, 1.0]])
    tx, ty = transfer(h, 1.0, 1.0)
    assert (float(tx), float(ty)) == (1.5, 0.5)


def test_transfer_one_matrix_per_point_equals_one_call_per_point():
    rng = np.random.default_rng(1)
    x, y = rng.uniform(0, 100, 6), rng.uniform(0, 100, 6)
    stack = np.stack([SHIFT, H_GENERAL, np.eye(3)] * 2)
    tx, ty = transfer(stack, x, y)
    for i in range(6):
        ex, ey = transfer(stack[i], x[i : i + 1], y[i : i + 1])
        assert (tx[i], ty[i]) == (ex[0], ey[0])


@pytest.mark.parametrize(
    ("h", "x", "y", "message"),
    [
        (np.full((3, 3), NAN), [1.0], [1.0], "homography"),
        (SHIFT, [NAN], [1.0], "x at index 0"),
        (SHIFT, [1.0], [math.inf], "y at index 0"),
        (np.eye(2), [1.0], [1.0], "shape"),
        (np.stack([SHIFT] * 3), [1.0, 2.0], [1.0, 2.0], "shape"),
        # w = 1*x + 0*y - 2 = 0 at x = 2: the point goes to infinity.
        (np.array([[1.0, 0, 0], [0, 1, 0], [1, 0, -2]]), [1.0, 2.0], [0.0, 0.0], "point 1"),
    ],
)
def test_transfer_refuses(h, x, y, message):
    with pytest.raises(InvalidInput, match=message):
        transfer(h, x, y)


def test_match_distance_formula():
    # 3-4-5 triangle: sqrt(3*3 + 4*4) = 5.
    assert match_distance([3.0], [4.0], [0.0], [0.0]).tolist() == [5.0]


# ----------------------------------------------------------------------------- sigma / mma


@pytest.mark.parametrize(
    ("offset", "at_sigma3", "at_mma3"),
    [
        (0.0, 1.0, 1.0),
        (2.9, 1.0, 1.0),  # 2.9 px off: within 3 either way
        (3.0, 0.0, 1.0),  # exactly 3 px: strict < 3 fails, inclusive <= 3 holds
        (3.1, 0.0, 0.0),
    ],
)
def test_sigma_exactly_on_a_distance(offset, at_sigma3, at_mma3):
    # Ground truth by the translation: (1, 1) -> (6, -2); the match sits `offset` px to its right
    # (6 + 3.0 - 6 = 3.0 exactly; 6 + 2.9 - 6 = 2.9000000000000004 < 3).
    gx, gy = ground_truth_from_homography(SHIFT, [1.0], [1.0])
    x1, y1 = gx + offset, gy
    ids, p = precision_at_sigma([0], x1, y1, gx, gy, [3.0])
    _, a = mma([0], x1, y1, gx, gy, [3.0])
    assert ids.tolist() == [0]
    assert p.tolist() == [[at_sigma3]]
    assert a.tolist() == [[at_mma3]]


def test_precision_table_with_a_pair_without_matches():
    # Pair 10: matches 0, 2.9, 3.0 px off -> sigma 3: 2/3 (strict), t 3: 3/3 (inclusive).
    # Pair 20: no match (only in `pairs`) -> 0. Pair 30: one match 6 px off -> 0 at 3, 0 at 6
    # (strict), 1 at 9. EventPoint precision at 3 = (2/3 + 0 + 0) / 3 = 2/9.
    pair = [30, 10, 10, 10]
    gx = np.array([0.0, 6.0, 6.0, 6.0])
    gy = np.array([0.0, -2.0, -2.0, -2.0])
    x1 = gx + np.array([6.0, 0.0, 2.9, 3.0])
    ids, p = precision_at_sigma(pair, x1, gy, gx, gy, [3, 6, 9], pairs=[30, 20, 10])
    assert ids.tolist() == [10, 20, 30]
    assert p.tolist() == [[2 / 3, 1.0, 1.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    assert p[:, 0].mean() == pytest.approx(2 / 9, rel=1e-15)
    _, a = mma(pair, x1, gy, gx, gy, pairs=[30, 20, 10])
    assert a.shape == (3, 10)  # t = 1..10
    assert a[0].tolist() == [1 / 3, 1 / 3, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    assert a[2].tolist() == [0.0] * 5 + [1.0] * 5  # 6 px: counted from t = 6 on


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"pairs": [1, 2]}, "match 0 has pair id 0"),
        ({"sigmas": [3.0, NAN]}, "sigmas at index 1"),
        ({"sigmas": [-1.0]}, ">= 0"),
        ({"gx": [NAN]}, "gx at index 0"),
        ({"gx": [1.0, 2.0]}, "length 1"),
    ],
)
def test_precision_refuses(kwargs, message):
    args = {"pair": [0], "x1": [0.0], "y1": [0.0], "gx": [0.0], "gy": [0.0], "sigmas": [3.0]}
    with pytest.raises(InvalidInput, match=message):
        precision_at_sigma(**(args | kwargs))


def test_no_matches_at_all():
    ids, p = precision_at_sigma([], [], [], [], [], [3.0], pairs=[4, 5])
    assert ids.tolist() == [4, 5]
    assert p.tolist() == [[0.0], [0.0]]
    ids, p = mma([], [], [], [], [], [3.0])
    assert ids.size == 0 and p.shape == (0, 1)


def _loop_fraction(pairs, matches, thresholds, inclusive):
    """Per pair, the obvious Python loop: count the matches within each threshold."""
    out = []
    for p in sorted(pairs):
        ds = [
            math.sqrt((x1 - gx) * (x1 - gx) + (y1 - gy) * (y1 - gy))
            for q, x1, y1, gx, gy in matches
            if q == p
        ]
        row = []
        for t in thresholds:
            hits = sum((d <= t) if inclusive else (d < t) for d in ds)
            row.append(hits / len(ds) if ds else 0.0)
        out.append(row)
    return out


half = st.integers(-20, 20).map(lambda k: k / 2)  # halves: distances land on thresholds
match = st.tuples(st.integers(0, 6), half, half, half, half)


@pytest.mark.slow  # hypothesis: 150 examples
@settings(max_examples=examples(150), deadline=None)
@given(
    matches=st.lists(match, max_size=40),
    n_pairs=st.integers(1, 8),
    thresholds=st.lists(st.integers(0, 24).map(lambda k: k / 2), min_size=1, max_size=5),
    inclusive=st.booleans(),
)
def test_vectorised_equals_loop_per_pair(matches, n_pairs, thresholds, inclusive):
    pairs = set(range(n_pairs)) | {m[0] for m in matches}  # some pairs without matches
    cols = list(zip(*matches, strict=True)) if matches else [[]] * 5
    fn = mma if inclusive else precision_at_sigma
    ids, values = fn(*cols, thresholds, pairs=list(pairs)[::-1])
    assert ids.tolist() == sorted(pairs)
    assert values.tolist() == _loop_fraction(pairs, matches, thresholds, inclusive)
    assert ((values >= 0) & (values <= 1)).all()
    order = np.argsort(thresholds, kind="stable")
    assert (np.diff(values[:, order], axis=1) >= 0).all()  # monotone in the threshold


# ----------------------------------------------------------------------------- disparity

# rows 0..3, columns 0..4; 0 = no ground truth
DISPARITY = np.array(
    [
        [0.0, 1.0, 2.0, 3.0, 4.0],
        [5.0, 6.0, 0.0, 8.0, 9.0],
        [10.0, 11.0, 12.0, 13.0, 14.0],
        [15.0, 16.0, 17.0, 18.0, 0.0],
    ]
)


@pytest.mark.parametrize(
    ("x0", "y0", "expected"),
    [
        (1.0, 2.0, 11.0),  # col 1, row 2
        (1.49, 0.0, 1.0),  # floor(1.99) = col 1
        (1.5, 0.0, 2.0),  # floor(2.0) = col 2: halves round up
        (2.0, 0.5, 0.0),  # row floor(1.0) = 1, col 2: a zero (invalid) pixel
        (-0.5, -0.5, 0.0),  # floor(0.0) = 0: still pixel (0, 0)
        (4.49, 3.49, 0.0),  # col 4, row 3: the last pixel
        (3.6, 2.4, 14.0),  # col floor(4.1) = 4, row floor(2.9) = 2
    ],
)
def test_sample_disparity_nearest_pixel(x0, y0, expected):
    assert sample_disparity(DISPARITY, [x0], [y0]).tolist() == [expected]


@pytest.mark.parametrize(
    ("x0", "y0", "message"),
    [
        (4.5, 0.0, r"point 1 \(4.5, 0.0\) falls on pixel row 0, column 5"),  # col 5 of 0..4
        (0.0, 3.5, "row 4"),  # row 4 of 0..3
        (-0.51, 0.0, "column -1"),  # floor(-0.01) = -1
        (0.0, -7.0, "row -7"),
    ],
)
def test_sample_disparity_refuses_points_off_the_map(x0, y0, message):
    with pytest.raises(InvalidInput, match=message) as info:
        sample_disparity(DISPARITY, [1.0, x0], [1.0, y0])
    assert "(4, 5)" in str(info.value)


def test_sample_disparity_16bit_png_scale():
    # DSEC stores disparity * 256 in uint16: 3200 / 256 = 12.5, 65535 / 256 = 255.99609375.
    raw = np.zeros((4, 5), dtype=np.uint16)
    raw[2, 3], raw[0, 0] = 3200, 65535
    d = sample_disparity(raw, [3.0, 0.0, 1.0], [2.0, 0.0, 1.0], scale=1 / 256)
    assert d.tolist() == [12.5, 255.99609375, 0.0]


def test_ground_truth_from_disparity_zero_is_invalid():
    # x1 = x0 - d, y1 = y0: (10 - 2.5, 4) = (7.5, 4); d = 0 -> invalid.
    d = sample_disparity(DISPARITY, [2.0, 2.0], [2.0, 1.0])  # 12 and the 0 at row 1, col 2
    x1, y1, valid = ground_truth_from_disparity([10.0, 10.0, 3.0], [4.0, 4.0, 1.0], [2.5, *d])
    assert x1.tolist() == [7.5, -2.0, 3.0]
    assert y1.tolist() == [4.0, 4.0, 1.0]
    assert valid.tolist() == [True, True, False]


# ----------------------------------------------------------------------------- iou

# group A: tp 3, fp 1, fn 2 -> 3 / 6 = 0.5; B: 1 / (1 + 0 + 3) = 0.25; C: 0 / 0 -> NaN.
IOU_TP, IOU_FP, IOU_FN = [3, 1, 0], [1, 0, 0], [2, 3, 0]


def test_iou_table_by_hand():
    values = iou(IOU_TP, IOU_FP, IOU_FN)
    assert values[:2].tolist() == [0.5, 0.25]
    assert math.isnan(values[2])
    assert iou_macro(IOU_TP, IOU_FP, IOU_FN) == 0.375  # (0.5 + 0.25) / 2, C left out
    assert iou_micro(IOU_TP, IOU_FP, IOU_FN) == 0.4  # (3 + 1 + 0) / (6 + 4 + 0)


def test_iou_all_empty_is_nan():
    assert math.isnan(iou_micro([0], [0], [0]))
    assert math.isnan(iou_macro([0, 0], [0, 0], [0, 0]))
    assert iou([], [], []).size == 0


@pytest.mark.parametrize(
    ("tp", "fp", "fn", "message"),
    [
        ([1, -1], [0, 0], [0, 0], "tp at index 1"),
        ([1], [0.5], [0], "fp at index 0"),
        ([1], [0], [NAN], "fn at index 0"),
        ([1, 2], [0], [0], "lengths"),
        ([True], [0], [0], "counts"),
    ],
)
def test_iou_refuses(tp, fp, fn, message):
    for fn_ in (iou, iou_micro, iou_macro):
        with pytest.raises(InvalidInput, match=message):
            fn_(tp, fp, fn)


# ----------------------------------------------------------------------------- corners

SCALE = np.diag([1.01, 1.01, 1.0])


def test_corner_convention_w_minus_1():
    # Corners (0,0), (639,0), (0,479), (639,479) scaled by 1.01 about the origin move by
    # 0, 6.39, 4.79 and sqrt(6.39^2 + 4.79^2) = sqrt(40.8321 + 22.9441) = 7.98600...:
    # (0 + 6.39 + 4.79 + 7.98600025) / 4 = 4.79150006...
    err = corner_error(np.eye(3)[None], SCALE[None], 640, 480)
    d3 = math.sqrt(6.39 * 6.39 + 4.79 * 4.79)
    assert err[0] == pytest.approx((0 + 6.39 + 4.79 + d3) / 4, rel=1e-13)
    assert err[0] == pytest.approx(4.7915000626, rel=1e-10)
    # With (w, h) corners it would be (0 + 6.4 + 4.8 + 8) / 4 = 4.8.
    assert corner_error(np.eye(3)[None], SCALE[None], 641, 481)[0] == pytest.approx(4.8)
    # 4.79 <= 5 is accurate, > 3 and > 1 is not.
    acc = homography_accuracy(np.eye(3)[None], SCALE[None], 640, 480, eps=(1, 3, 5))
    assert acc.tolist() == [[0.0, 0.0, 1.0]]


def test_homography_accuracy_missing_matrices():
    nan = np.full((3, 3), NAN)
    h_true = np.stack([np.eye(3), np.eye(3), nan, np.eye(3)])
    h_est = np.stack([np.eye(3), nan, np.eye(3), SCALE])
    acc = homography_accuracy(h_true, h_est, [640, 640, 640, 640], 480)
    # identical -> correct everywhere; failed estimate -> incorrect (SuperPoint); no truth -> NaN.
    assert acc[[0, 1, 3]].tolist() == [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    assert np.isnan(acc[2]).all()
    err = corner_error(h_true, h_est, 640, 480)
    assert err[0] == 0.0 and np.isnan(err[1]) and np.isnan(err[2])


@pytest.mark.parametrize(
    ("h_est", "width", "message"),
    [
        (np.array([[[1.0, 0, 0], [0, 1, 0], [0, 0, NAN]]]), 640, "partly non-finite"),
        (np.eye(3), 640, "shape"),
        (np.eye(3)[None], 0, "width"),
        (np.eye(3)[None], 640.5, "width"),
    ],
)
def test_corner_error_refuses(h_est, width, message):
    with pytest.raises(InvalidInput, match=message):
        corner_error(np.eye(3)[None], h_est, width, 480)


# ----------------------------------------------------------------------------- estimation


def _correspondences(h, n=50, seed=0):
    """n points of image 0 and their exact images x1 ~ H x0."""
    rng = np.random.default_rng(seed)
    x0, y0 = rng.uniform(0, 640, n), rng.uniform(0, 480, n)
    x1, y1 = transfer(h, x0, y0)
    return x0, y0, x1, y1


def test_estimate_homography_recovers_the_inverse_deterministically():
    x0, y0, x1, y1 = _correspondences(H_GENERAL)
    r, n_inliers = estimate_homography(x0, y0, x1, y1)
    assert n_inliers == 50
    assert r is not None and r[2, 2] == 1.0
    # R maps image 1 -> image 0, so R ~ inv(H); OpenCV computes in float32.
    assert np.allclose(r, invert_homography(H_GENERAL), rtol=1e-5, atol=1e-6)
    r2, n2 = estimate_homography(x0, y0, x1, y1)
    assert r2 is not None and (r2 == r).all() and n2 == n_inliers


@pytest.mark.parametrize(
    "points",
    [
        ([0.0, 1.0, 2.0], [0.0, 1.0, 0.0]),  # 3 matches < 4
        ([], []),
        ([5.0] * 6, [5.0] * 6),  # all the same point: degenerate
    ],
)
def test_estimate_homography_fails_cleanly(points):
    x, y = points
    assert estimate_homography(x, y, x, y) == (None, 0)


def test_reprojection_error_exact_and_shifted():
    x0, y0, x1, y1 = _correspondences(H_GENERAL)
    r, _ = estimate_homography(x0, y0, x1, y1)
    assert r is not None
    pair = np.zeros(50, dtype=int)
    ids, err = reprojection_error(pair, x0, y0, x1, y1, r[None])
    assert ids.tolist() == [0] and err[0] < 1e-3  # float32 estimate of exact matches
    # With the exact R = inv(H) and image-0 points moved by (3, 4): every distance is
    # sqrt(3*3 + 4*4) = 5, so the mean is 5.
    exact = invert_homography(H_GENERAL)
    _, err = reprojection_error(pair, x0 + 3.0, y0 + 4.0, x1, y1, exact[None])
    assert err[0] == pytest.approx(5.0, rel=1e-9)


def test_reprojection_error_missing_and_empty_pairs():
    # Pair 1 under the translation, its match 1 px off: tx = 1 + 5 = 6 vs x0 = 7 -> 1.
    # Pair 2: matrix missing -> NaN; pair 3: no match -> NaN.
    nan = np.full((3, 3), NAN)
    args = ([1, 2, 1], [7.0, 0.0, 6.0], [-2.0, 0.0, -2.0], [1.0, 0.0, 1.0], [1.0, 0.0, 1.0])
    ids, err = reprojection_error(*args, np.stack([SHIFT, nan, SHIFT]), pairs=[1, 2, 3])
    assert ids.tolist() == [1, 2, 3]
    assert err[0] == 0.5  # (1 + 0) / 2
    assert np.isnan(err[1:]).all()
    # The same with a mapping: absent key and None are both missing.
    _, err_map = reprojection_error(*args, {1: SHIFT, 2: None}, pairs=[3, 2, 1])
    assert err_map[0] == 0.5 and np.isnan(err_map[1:]).all()


def test_reprojection_error_array_needs_sorted_pairs():
    with pytest.raises(InvalidInput, match="sorted and distinct"):
        reprojection_error([1], [0.0], [0.0], [0.0], [0.0], np.stack([SHIFT] * 2), pairs=[2, 1])


# ----------------------------------------------------------------------------- helpers


def test_invert_homography():
    # inv(translation by (5, -3)) = translation by (-5, 3).
    inv = invert_homography(SHIFT)
    assert inv is not None and inv.tolist() == [[1, 0, -5], [0, 1, 3], [0, 0, 1]]
    # Scaled input: 2 * H_GENERAL has the same normalised inverse.
    a, b = invert_homography(H_GENERAL), invert_homography(2 * H_GENERAL)
    assert a is not None and b is not None and a[2, 2] == 1.0 and np.allclose(a, b, rtol=1e-14)
    assert invert_homography(np.zeros((3, 3))) is None
    assert invert_homography(np.full((3, 3), NAN)) is None


@pytest.mark.parametrize(
    ("h", "message"),
    [
        (np.zeros((3, 3)), "H of pair 7 is singular"),
        (np.diag([1.0, 1.0, 1e-13]), "H of pair 7 is singular"),
        (np.full((3, 3), NAN), "H of pair 7"),
        (np.eye(4), "shape"),
    ],
)
def test_check_homography_refuses(h, message):
    with pytest.raises(InvalidInput, match=message):
        check_homography(h, "H of pair 7")


def test_check_homography_accepts():
    assert check_homography(H_GENERAL, "H").tolist() == H_GENERAL.tolist()
