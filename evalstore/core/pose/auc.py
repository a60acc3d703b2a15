"""The area under the recall curve of errors (pose AUC, homography AUC), as each evaluation
code computes it, and glue-factory's mean over thresholds (mAA) and choice of RANSAC threshold.

Per threshold ``t``, the AUC is the area under the cumulative recall of the errors (the fraction
of pairs with an error <= e) from e = 0 to e = t, divided by t: the trapezoids between the
sorted errors, the curve starting at (0, 0) and held flat from the last error below t to t.
An infinite error (a failed estimate) is in the denominator and never under the curve.

Three codes, the same formula in different floating-point steps:

- :func:`pose_auc`: SuperGlue's ``pose_auc`` (magicleap/SuperGluePretrainedNetwork
  ``models/utils.py`` @ ddcf11f42e7e0732a0c4607648f9448ea8d73590), recall
  ``(arange(n) + 1) / n``;
- :func:`error_auc_loftr`: LoFTR's ``error_auc`` (zju3dv/LoFTR ``src/utils/metrics.py`` @
  df7ca80f917334b94cfbe32cc2901e09a80e70a8), recall ``np.linspace(0, 1, n + 1)`` over Python
  lists (it may differ from SuperGlue's in the last bit);
- :func:`auc_gluefactory`: glue-factory's ``cal_error_auc`` (cvg/glue-factory
  ``gluefactory/utils/tools.py`` @ 2d17e3b3bd7d30f0c828d4c4d3eac4ecefbf283d, what its
  ``AUCMetric.compute`` returns), SuperGlue's code with each AUC rounded to 4 decimals.

``np.trapz`` of the references is ``np.trapezoid`` here (NumPy 2 renamed it; the same sum
``sum(diff(x) * (y[1:] + y[:-1]) / 2)``).

>>> pose_auc([0.0, 2.5, 7.5, float("inf")], [5, 10, 20])
[0.4375, 0.59375, 0.671875]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from evalstore.errors import InvalidInput

__all__ = [
    "HOMOGRAPHY_AUC_THRESHOLDS",
    "POSE_AUC_THRESHOLDS",
    "auc_gluefactory",
    "best_threshold_gluefactory",
    "error_auc_loftr",
    "maa_gluefactory",
    "pose_auc",
]

ArrayLike = npt.ArrayLike
FloatArray = npt.NDArray[np.float64]

#: the AUC thresholds of the pose benchmarks, degrees (SuperGlue, LoFTR, glue-factory)
POSE_AUC_THRESHOLDS = (5.0, 10.0, 20.0)
#: the AUC thresholds of the HPatches homography benchmark, pixels (glue-factory, LightGlue)
HOMOGRAPHY_AUC_THRESHOLDS = (1.0, 3.0, 5.0)


def error_array(errors: ArrayLike) -> FloatArray:
    """The errors as a 1-D float64 array: >= 0, +inf allowed (a failed estimate), no NaN.

    >>> error_array([0.5, 2, float("inf")])
    array([0.5, 2. , inf])
    >>> error_array([1.0, -2.0])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    evalstore.errors.InvalidInput: errors[1] is -2.0: an error is >= 0, or +inf for a ...
    """
    try:
        arr = np.asarray(errors, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"errors must be numbers: {exc}") from None
    if arr.ndim != 1:
        raise InvalidInput(f"errors must be a 1-D array, got shape {arr.shape}")
    bad = np.flatnonzero(np.isnan(arr) | (arr < 0))
    if bad.size:
        i = int(bad[0])
        raise InvalidInput(
            f"errors[{i}] is {arr[i]}: an error is >= 0, or +inf for a failed estimate"
        )
    return arr


def _thresholds(thresholds: Sequence[float]) -> list[float]:
    """The AUC thresholds, each finite and > 0, in the order given."""
    out = [float(t) for t in thresholds]
    for t in out:
        if not np.isfinite(t) or t <= 0:
            raise InvalidInput(f"an AUC threshold is finite and > 0, got {t}")
    return out


def pose_auc(errors: ArrayLike, thresholds: Sequence[float]) -> list[float]:
    """SuperGlue's ``pose_auc``: per threshold t, the area under the recall curve of the
    errors from 0 to t, over t.

    The errors sorted, recall ``(i + 1) / n`` at the i-th, both prefixed by 0; per t,
    ``k = searchsorted(errors, t)`` (the errors < t, plus the leading 0), the curve's first k
    points then (t, recall[k - 1]), ``trapezoid / t``. An error equal to t adds no area (the
    curve reaches it at t). No errors: 0 for every t.

    Args:
        errors: one error per pair (degrees for pose: ``max(err_t, err_R)``), +inf where the
            estimate failed.
        thresholds: the thresholds, in the unit of the errors, each > 0.

    Returns:
        One AUC in [0, 1] per threshold, in order.

    Raises:
        InvalidInput: a NaN or negative error, a threshold <= 0 or not finite.

    Errors 0, 2.5, 7.5 and a failure, at 5: the trapezoids (0, 0)-(0, 1/4)-(2.5, 1/2)-(5, 1/2)
    are 0 + 0.9375 + 1.25, over 5:

    >>> pose_auc([0.0, 2.5, 7.5, float("inf")], [5])
    [0.4375]
    """
    errs, ths = error_array(errors), _thresholds(thresholds)
    # models/utils.py pose_auc, line for line
    sort_idx = np.argsort(errs)
    errs = np.array(errs.copy())[sort_idx]
    recall = (np.arange(len(errs)) + 1) / len(errs)
    errs = np.r_[0.0, errs]
    recall = np.r_[0.0, recall]
    aucs = []
    for t in ths:
        last_index = np.searchsorted(errs, t)
        r = np.r_[recall[:last_index], recall[last_index - 1]]
        e = np.r_[errs[:last_index], t]
        aucs.append(float(np.trapezoid(r, x=e) / t))
    return aucs


def error_auc_loftr(errors: ArrayLike, thresholds: Sequence[float]) -> list[float]:
    """LoFTR's ``error_auc``: :func:`pose_auc` with the recall ``np.linspace(0, 1, n + 1)``
    and the errors as a sorted Python list.

    LoFTR's function overwrites its ``thresholds`` argument with ``[5, 10, 20]`` (``thresholds =
    [5, 10, 20]`` in its body) and returns ``{"auc@5": ..., ...}``; this one takes the
    thresholds as given and returns the list in their order, so ``(5, 10, 20)`` gives LoFTR's
    three numbers.

    Args:
        errors, thresholds: as in :func:`pose_auc`.

    Returns:
        One AUC per threshold, in order.

    Raises:
        InvalidInput: as :func:`pose_auc`.

    >>> error_auc_loftr([0.0, 2.5, 7.5, float("inf")], [5, 10])
    [0.4375, 0.59375]
    """
    errs, ths = error_array(errors), _thresholds(thresholds)
    # src/utils/metrics.py error_auc, line for line (float() of each: LoFTR's errors are
    # np.float64 items of an array)
    err_list = [0.0, *sorted(float(e) for e in errs)]  # [0] + sorted(list(errors))
    recall = list(np.linspace(0, 1, len(err_list)))
    aucs = []
    for thr in ths:
        last_index = np.searchsorted(err_list, thr)
        y = [*recall[:last_index], recall[last_index - 1]]
        x = [*err_list[:last_index], thr]
        aucs.append(float(np.trapezoid(y, x) / thr))
    return aucs


def auc_gluefactory(errors: ArrayLike, thresholds: Sequence[float]) -> list[float]:
    """glue-factory's AUC (``AUCMetric(thresholds, errors).compute()``, i.e. ``cal_error_auc``):
    :func:`pose_auc`'s arithmetic, each AUC rounded to 4 decimals (``np.round(auc, 4)``).

    glue-factory uses it for the pose AUC (megadepth1500, scannet1500: errors
    ``max(err_R, err_t)``) and the homography AUC (hpatches: the corner errors of
    :func:`~evalstore.core.pose.homography_corner_errors`). Its ``AUCMetric`` returns a single
    NaN for no errors, here one NaN per threshold; it wraps thresholds that are not a list in
    a list, this one takes any sequence as the thresholds.

    Args:
        errors, thresholds: as in :func:`pose_auc`.

    Returns:
        One AUC per threshold, rounded to 4 decimals; NaN for each with no errors.

    Raises:
        InvalidInput: as :func:`pose_auc`.

    0.59375 rounds to 0.5938 (``np.round``: half to even of 5937.5), 0.671875 to 0.6719:

    >>> auc_gluefactory([0.0, 2.5, 7.5, float("inf")], [5, 10, 20])
    [0.4375, 0.5938, 0.6719]
    """
    errs, ths = error_array(errors), _thresholds(thresholds)
    if len(errs) == 0:  # AUCMetric.compute
        return [float("nan")] * len(ths)
    # gluefactory/utils/tools.py cal_error_auc is SuperGlue's pose_auc line for line, but for
    # np.round(auc, 4) (tests/conformance/reference_pose.py holds both transcriptions)
    return [float(np.round(a, 4)) for a in pose_auc(errs, ths)]


def maa_gluefactory(errors: ArrayLike, thresholds: Sequence[float]) -> float:
    """glue-factory's mAA: the mean of the (rounded) AUCs of :func:`auc_gluefactory`
    (``np.mean(v)`` in ``gluefactory/eval/utils.py`` ``eval_poses``), not rounded again.

    Args:
        errors, thresholds: as in :func:`pose_auc`.

    Returns:
        The mean AUC; NaN with no errors.

    Raises:
        InvalidInput: as :func:`pose_auc`.

    >>> maa_gluefactory([0.0, 2.5, 7.5, float("inf")], [5, 10, 20])
    0.5677333333333333
    """
    return float(np.mean(auc_gluefactory(errors, thresholds)))


def best_threshold_gluefactory(
    errors_by_threshold: Mapping[float, ArrayLike], thresholds: Sequence[float]
) -> tuple[float, list[float], float]:
    """glue-factory's choice of RANSAC threshold (``eval_poses``): per RANSAC threshold the
    AUCs of its errors (:func:`auc_gluefactory`), their mean (:func:`maa_gluefactory`), and the
    threshold of the largest mean.

    ``best_th = max(mAAs, key=mAAs.get)``: ties go to the first threshold in the mapping's
    order (glue-factory's: the order of its ``test_thresholds``, ascending; evalstore's copy is
    ``evalstore.metrics.pose_catalogue.GLUEFACTORY_RANSAC_SWEEP``); a NaN mean (no errors) is
    never greater than another (it wins only as the first).

    Args:
        errors_by_threshold: RANSAC threshold (pixels) -> the errors of the estimates made at it.
        thresholds: the AUC thresholds.

    Returns:
        (best RANSAC threshold, its AUCs, its mAA).

    Raises:
        InvalidInput: no RANSAC threshold, or an error or threshold :func:`pose_auc` refuses.

    >>> best_threshold_gluefactory({1.0: [1.0, 30.0], 2.0: [1.0, 3.0]}, [5, 10])
    (2.0, [0.75, 0.875], 0.8125)
    """
    if not errors_by_threshold:
        raise InvalidInput("best_threshold_gluefactory needs the errors of one RANSAC threshold")
    pose_aucs = {th: auc_gluefactory(e, thresholds) for th, e in errors_by_threshold.items()}
    maas = {th: float(np.mean(v)) for th, v in pose_aucs.items()}
    best_th = max(maas, key=maas.__getitem__)
    return float(best_th), pose_aucs[best_th], maas[best_th]
