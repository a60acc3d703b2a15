"""Deliberately slow, obviously correct loops of the pose metrics, one pair (or one run's list
of errors) at a time, from the published formulas: what the NumPy core and the SQL metrics are
checked against (``tests/conformance/test_pose_references.py``)."""

from __future__ import annotations

import math
from collections.abc import Sequence


def auc_loop(errors: Sequence[float], thresholds: Sequence[float]) -> list[float]:
    """Per threshold t, the area under the recall curve through (0, 0) and (e_(i), i / n) (the
    errors sorted) up to the last error below t, then flat to t; over t (SuperGlue's
    ``pose_auc``). No errors: 0."""
    n = len(errors)
    ordered = sorted(errors)
    out = []
    for t in thresholds:
        area = 0.0
        prev_e, prev_r = 0.0, 0.0
        for i, e in enumerate(ordered):
            if not e < t:
                break
            r = (i + 1) / n
            area += (e - prev_e) * (prev_r + r) / 2
            prev_e, prev_r = e, r
        area += (t - prev_e) * prev_r
        out.append(area / t)
    return out


def maa_loop(aucs: Sequence[float]) -> float:
    """The mean of a list of AUCs, summed left to right."""
    total = 0.0
    for a in aucs:
        total += a
    return total / len(aucs)


def imc_accuracy_loop(errors: Sequence[float]) -> list[float]:
    """IMC's cumulative accuracy at k = 1..10 degrees: the fraction of errors < k, and <= 10
    for k = 10 (its histogram's last bin is closed). No errors: zeros."""
    n = len(errors)
    out = []
    for k in range(1, 11):
        hits = 0
        for e in errors:
            if e < k or (k == 10 and e == 10):
                hits += 1
        out.append(hits / n if n else 0.0)
    return out


def epipolar_distance_loop(
    p0: Sequence[float],
    p1: Sequence[float],
    T: Sequence[Sequence[float]],
    K0: Sequence[Sequence[float]],
    K1: Sequence[Sequence[float]],
) -> float:
    """One match's squared symmetric epipolar distance, with scalars: x0, x1 normalised by the
    intrinsics, E = [t]x R, d = (x1' E x0)^2 (1 / (l0_x^2 + l0_y^2) + 1 / (l1_x^2 + l1_y^2)) with
    l0 = E x0 and l1 = E^T x1. NaN where a line degenerates."""
    x0 = [(p0[0] - K0[0][2]) / K0[0][0], (p0[1] - K0[1][2]) / K0[1][1], 1.0]
    x1 = [(p1[0] - K1[0][2]) / K1[0][0], (p1[1] - K1[1][2]) / K1[1][1], 1.0]
    tx, ty, tz = T[0][3], T[1][3], T[2][3]
    skew = [[0.0, -tz, ty], [tz, 0.0, -tx], [-ty, tx, 0.0]]
    E = [[sum(skew[i][k] * T[k][j] for k in range(3)) for j in range(3)] for i in range(3)]
    l0 = [sum(E[i][j] * x0[j] for j in range(3)) for i in range(3)]
    l1 = [sum(E[j][i] * x1[j] for j in range(3)) for i in range(3)]
    num = sum(x1[i] * l0[i] for i in range(3)) ** 2
    den0 = l0[0] ** 2 + l0[1] ** 2
    den1 = l1[0] ** 2 + l1[1] ** 2
    if den0 == 0 or den1 == 0:
        return math.nan if num == 0 else math.inf
    return num * (1 / den0 + 1 / den1)


def epipolar_precision_loop(distances: Sequence[float], threshold: float) -> float:
    """The fraction of a pair's matches with a distance < threshold (NaN incorrect); 0 without
    matches."""
    if not distances:
        return 0.0
    return sum(1 for d in distances if d < threshold) / len(distances)


def matching_score_loop(distances: Sequence[float], n_keypoints0: int, threshold: float) -> float:
    """A pair's correct matches over the keypoints of image 0; 0 without keypoints."""
    if n_keypoints0 == 0:
        return 0.0
    return sum(1 for d in distances if d < threshold) / n_keypoints0


def corner_error_loop(
    H_est: Sequence[Sequence[float]], H_true: Sequence[Sequence[float]], w: float, h: float
) -> float:
    """glue-factory's corner error of one pair: the mean distance of (0, 0), (w, 0), (w, h),
    (0, h) mapped by the estimate and by the truth."""

    def warp(H: Sequence[Sequence[float]], x: float, y: float) -> tuple[float, float]:
        z = H[2][0] * x + H[2][1] * y + H[2][2]
        return (H[0][0] * x + H[0][1] * y + H[0][2]) / z, (H[1][0] * x + H[1][1] * y + H[1][2]) / z

    total = 0.0
    for x, y in ((0.0, 0.0), (w, 0.0), (w, h), (0.0, h)):
        ex, ey = warp(H_est, x, y)
        gx, gy = warp(H_true, x, y)
        total += math.hypot(ex - gx, ey - gy)
    return total / 4
