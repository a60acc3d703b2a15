"""Slow, obviously correct definitions of the pose metrics (the relative pose AUC, mAA and
median error, IMC's mAA, the RANSAC threshold kept, the homography AUC, epipolar precision and
matching score), for the parity test: plain loops over one run's pairs from the formulas of
docs/metrics.md ("Relative pose, epipolar precision, homography AUC"), with the registry's
signature ``SLOW[name](inputs, params) -> Result``.

The AUC at t of errors e_1 <= ... <= e_n: the trapezoids of (0, 0), (e_i, r_i) over the errors
below t, then flat to t, over t; r_i = i / n (SuperGlue), i * (1 / n) with r_n = 1 (LoFTR's
linspace), or SuperGlue's rounded half to even at 4 decimals (glue-factory). Under several
RANSAC thresholds, the one whose mean AUC at 5, 10, 20 degrees is the largest, the first
among equal ones.

>>> _auc([0.0, 2.5, 7.5, math.inf], 5.0, "superglue")
0.4375
>>> _round_half_even(0.59375, 4), _round_half_even(0.671875, 4)
(0.5938, 0.6719)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

import numpy as np

from evalstore.metrics.pose_catalogue import PoseRules, rules_of
from evalstore.metrics.pose_inputs import PoseRun
from evalstore.metrics.registry import KeypointRun, Params, Result

FIXED = (5.0, 10.0, 20.0)  # the AUC thresholds of the mAA that chooses a RANSAC threshold


def _ids(values: list[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _round_half_even(x: float, digits: int) -> float:
    """``x`` rounded half to even after scaling by 10^digits, as ``np.round`` does (the scaled
    float, not the decimal text, decides)."""
    scaled = x * 10**digits
    return float(Decimal(scaled).quantize(Decimal(1), rounding=ROUND_HALF_EVEN)) / 10**digits


def _auc(errors: Sequence[float], t: float, code: str) -> float:
    n = len(errors)
    area, prev_e, prev_r = 0.0, 0.0, 0.0
    for i, e in enumerate(sorted(errors), 1):
        if not e < t:
            break
        r = (1.0 if i == n else i * (1.0 / n)) if code == "loftr" else i / n
        area += (e - prev_e) * (r + prev_r) / 2
        prev_e, prev_r = e, r
    value = (area + (t - prev_e) * prev_r) / t
    return _round_half_even(value, 4) if code == "gluefactory" else value


def _chosen(run: PoseRun, rules: PoseRules) -> tuple[float, list[Any], list[float]] | None:
    """(RANSAC threshold, pairs, errors) of the estimates the values are read at."""
    best = None
    for th in rules.ransac_thresholds:
        pairs, errors = [], []
        for i in range(run.est_pair.size):
            same = run.est_method[i] == rules.method and run.est_confidence[i] == rules.confidence
            if same and run.est_threshold[i] == th:
                pairs.append(run.est_pair[i])
                errors.append(max(float(run.err_t[i]), float(run.err_r[i])))
        if not errors:
            continue
        aucs = [_auc(errors, t, rules.auc) for t in FIXED]
        maa = (aucs[0] + aucs[1] + aucs[2]) / 3
        if best is None or maa > best[0]:
            best = (maa, th, pairs, errors)
    return None if best is None else (float(best[1]), best[2], best[3])


def _run_rows(values: list[float], at: list[float] | None = None) -> Result:
    a = None if at is None else np.array(at, dtype=np.float64)
    return Result(_ids([None] * len(values)), np.array(values, dtype=np.float64), a)


def _at(params: Params, default: tuple[float, ...]) -> list[float]:
    return [float(v) for v in (default if params.at is None else params.at)]


def pose_error(inputs: PoseRun, params: Params) -> Result:
    """Each pair's max(err_t, err_R); the run's: the middle of the sorted errors, or the mean
    of the two middle ones (glue-factory: rounded to 3 decimals, half to even)."""
    rules = rules_of(params.pose)
    chosen = _chosen(inputs, rules)
    if chosen is None:
        return _run_rows([])
    _, pairs, errors = chosen
    s, n = sorted(errors), len(errors)
    median = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    if rules.auc == "gluefactory" and math.isfinite(median):
        median = _round_half_even(median, 3)
    return Result(_ids([*pairs, None]), np.array([*errors, median], dtype=np.float64))


def pose_auc(inputs: PoseRun, params: Params) -> Result:
    """The AUC of the chosen errors at each threshold (degrees)."""
    rules = rules_of(params.pose)
    at = _at(params, FIXED)
    chosen = _chosen(inputs, rules)
    if chosen is None:
        return _run_rows([], [])
    return _run_rows([_auc(chosen[2], t, rules.auc) for t in at], at)


def pose_maa(inputs: PoseRun, params: Params) -> Result:
    """(AUC@5 + AUC@10 + AUC@20) / 3 of the chosen errors."""
    rules = rules_of(params.pose)
    chosen = _chosen(inputs, rules)
    if chosen is None:
        return _run_rows([])
    aucs = [_auc(chosen[2], t, rules.auc) for t in FIXED]
    return _run_rows([(aucs[0] + aucs[1] + aucs[2]) / 3])


def pose_maa_imc(inputs: PoseRun, params: Params) -> Result:
    """IMC: the mean over k = 1..u of the share of errors < k (<= 10 at k = 10)."""
    at = _at(params, (10.0,))
    chosen = _chosen(inputs, rules_of(params.pose))
    if chosen is None:
        return _run_rows([], [])
    errors = chosen[2]
    values = []
    for u in at:
        if not 1 <= u <= 10:
            values.append(math.nan)
            continue
        total = 0.0
        for k in range(1, int(u) + 1):
            hits = sum(1 for e in errors if e < k or (k == 10 and e == 10))
            total += hits / len(errors)
        values.append(total / u)
    return _run_rows(values, at)


def pose_ransac_threshold(inputs: PoseRun, params: Params) -> Result:
    """The RANSAC threshold the errors are read at."""
    chosen = _chosen(inputs, rules_of(params.pose))
    return _run_rows([] if chosen is None else [chosen[0]])


def _warp(h: np.ndarray, x: float, y: float) -> tuple[float, float, float]:
    w = h[2, 0] * x + h[2, 1] * y + h[2, 2]
    return h[0, 0] * x + h[0, 1] * y + h[0, 2], h[1, 0] * x + h[1, 1] * y + h[1, 2], w


def homography_auc(inputs: KeypointRun, params: Params) -> Result:
    """The AUC of the corner errors: corners (0, 0), (w, 0), (w, h), (0, h) warped by the
    estimate and the truth, the mean distance; inf without an estimate or at infinity; pairs
    without a truth or size left out; NaN when none is left."""
    errors = []
    for p in range(inputs.pairs.size):
        w, h = inputs.width[p], inputs.height[p]
        if np.isnan(inputs.h[p]).any() or np.isnan(w) or np.isnan(h):
            continue
        if np.isnan(inputs.e[p]).any():
            errors.append(math.inf)
            continue
        total = 0.0
        for x, y in ((0.0, 0.0), (w, 0.0), (w, h), (0.0, h)):
            ex, ey, ew = _warp(inputs.e[p], x, y)
            gx, gy, gw = _warp(inputs.h[p], x, y)
            if ew == 0 or gw == 0:
                total = math.inf
                break
            total += math.sqrt((ex / ew - gx / gw) ** 2 + (ey / ew - gy / gw) ** 2)
        errors.append(total / 4)
    at = _at(params, (1.0, 3.0, 5.0))
    if not errors:
        return _run_rows([math.nan] * len(at), at)
    return _run_rows([_auc(errors, t, rules_of(params.pose).auc) for t in at], at)


def _distance(run: PoseRun, p: int, m: int) -> float:
    """The squared symmetric epipolar distance of match m under pair p's true pose."""
    k0, k1, t = run.k0[p], run.k1[p], run.t[p]
    x0 = [(run.x0[m] - k0[0, 2]) / k0[0, 0], (run.y0[m] - k0[1, 2]) / k0[1, 1], 1.0]
    x1 = [(run.x1[m] - k1[0, 2]) / k1[0, 0], (run.y1[m] - k1[1, 2]) / k1[1, 1], 1.0]
    tx, ty, tz = t[0, 3], t[1, 3], t[2, 3]
    skew = [[0.0, -tz, ty], [tz, 0.0, -tx], [-ty, tx, 0.0]]
    e = [[sum(skew[i][k] * t[k, j] for k in range(3)) for j in range(3)] for i in range(3)]
    l0 = [sum(e[i][j] * x0[j] for j in range(3)) for i in range(3)]
    l1 = [sum(e[j][i] * x1[j] for j in range(3)) for i in range(3)]
    num = sum(x1[i] * l0[i] for i in range(3)) ** 2
    den0, den1 = l0[0] ** 2 + l0[1] ** 2, l1[0] ** 2 + l1[1] ** 2
    if den0 == 0 or den1 == 0:
        return math.nan
    return float(num * (1 / den0 + 1 / den1))


def _per_pair(run: PoseRun, params: Params, value: Callable[[int, int, int], float]) -> Result:
    rows = []
    for p, pid in enumerate(run.pairs.tolist()):
        matches = [m for m in range(run.pair.size) if run.pair[m] == pid]
        for t in _at(params, (5e-4,)):
            correct = sum(1 for m in matches if _distance(run, p, m) < t)
            rows.append((pid, t, value(p, correct, len(matches))))
    return Result(_ids([r[0] for r in rows]), np.array([r[2] for r in rows], dtype=np.float64),
                  np.array([r[1] for r in rows], dtype=np.float64))  # fmt: skip


def epipolar_precision(inputs: PoseRun, params: Params) -> Result:
    """Per pair with cameras: correct matches (distance < t) over its matches; 0 without."""
    return _per_pair(inputs, params, lambda _, c, n: c / n if n else 0.0)


def matching_score(inputs: PoseRun, params: Params) -> Result:
    """Per pair with cameras: correct matches over n_keypoints0; 0 when it is 0; NaN unknown."""

    def value(p: int, correct: int, _: int) -> float:
        n = inputs.n_keypoints0[p]
        return math.nan if math.isnan(n) else (correct / n if n else 0.0)

    return _per_pair(inputs, params, value)


SLOW_POSE: dict[str, Callable[[Any, Params], Result]] = {
    "pose_error": pose_error,
    "pose_auc": pose_auc,
    "pose_maa": pose_maa,
    "pose_maa_imc": pose_maa_imc,
    "pose_ransac_threshold": pose_ransac_threshold,
    "homography_auc": homography_auc,
    "epipolar_precision": epipolar_precision,
    "matching_score": matching_score,
}
