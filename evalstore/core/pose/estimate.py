"""Relative pose from keypoint matches, and its error, as SuperGlue's evaluation computes them.

SuperGlue's ``models/utils.py`` (magicleap/SuperGluePretrainedNetwork @ ddcf11f42e7e) defines
the estimate (``estimate_pose``: the matches normalised by the intrinsics, OpenCV's
``findEssentialMat`` with RANSAC at a threshold of ``thresh`` pixels over the mean focal
length, then ``recoverPose`` on each candidate, the one with most inliers kept) and the error
(``compute_pose_error``: the angle between the translation directions, folded to at most 90
degrees because an essential matrix fixes t up to sign, and the rotation angle of R^T R_gt).
LoFTR (zju3dv/LoFTR ``src/utils/metrics.py``) estimates the same way at other thresholds,
glue-factory's ``opencv`` estimator too but for the mean focal length
(:func:`estimate_pose_gluefactory`). A failed estimate (fewer than 5 matches, no essential
matrix) has infinite error.

>>> import numpy as np
>>> T = np.eye(4); T[:3, 3] = (1.0, 0.0, 0.0)
>>> [float(e) for e in pose_errors(T, np.eye(3), np.array([-2.0, 0.0, 0.0]))]  # t up to sign
[0.0, 0.0]
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = [
    "PoseEstimate",
    "angle_error_mat",
    "angle_error_vec",
    "estimate_pose",
    "estimate_pose_gluefactory",
    "pose_errors",
]

Array = npt.NDArray[np.float64]

#: (R 3x3, unit t 3, inlier mask over the matches) or None where estimation failed
PoseEstimate = tuple[Array, Array, npt.NDArray[np.bool_]] | None


def estimate_pose(
    kpts0: Array, kpts1: Array, K0: Array, K1: Array, thresh: float, conf: float = 0.99999
) -> PoseEstimate:
    """SuperGlue's ``estimate_pose``: the relative pose 0 -> 1 from matched pixel coordinates
    (N x 2 each), intrinsics K0, K1 (3 x 3), RANSAC threshold ``thresh`` in pixels and
    confidence ``conf``. None with fewer than 5 matches or no essential matrix (LoFTR's guard:
    SuperGlue asserts). The pixel threshold is divided by
    ``mean([K0[0, 0], K1[1, 1], K0[0, 0], K1[1, 1]])`` (SuperGlue's and LoFTR's f_mean)."""
    if len(kpts0) < 5:
        return None
    f_mean = np.mean([K0[0, 0], K1[1, 1], K0[0, 0], K1[1, 1]])
    return _estimate(kpts0, kpts1, K0, K1, thresh / f_mean, conf)


def estimate_pose_gluefactory(
    kpts0: Array, kpts1: Array, K0: Array, K1: Array, thresh: float, conf: float = 0.99999
) -> PoseEstimate:
    """glue-factory's ``opencv`` relative-pose estimator (cvg/glue-factory
    ``gluefactory/robust_estimators/relative_pose/opencv.py`` @ 2d17e3b3, the estimator of its
    scannet1500 benchmark): :func:`estimate_pose` but for the mean focal length, the mean of
    all four ``torch.cat([camera0.f, camera1.f]).mean()`` = ``mean([fx0, fy0, fx1, fy1])``
    (SuperGlue's counts fx0 and fy1 twice; the two agree where fx = fy). glue-factory feeds
    float32 coordinates to OpenCV (its data are float32 tensors); this one float64, so its
    estimate can differ from glue-factory's in the last bits and, through RANSAC, more.

    Args:
        kpts0, kpts1, K0, K1, thresh, conf: as in :func:`estimate_pose` (glue-factory's
            default confidence is 0.99999 too).

    Returns:
        As :func:`estimate_pose`.
    """
    if len(kpts0) < 5:
        return None
    f_mean = np.mean([K0[0, 0], K0[1, 1], K1[0, 0], K1[1, 1]])
    return _estimate(kpts0, kpts1, K0, K1, thresh / f_mean, conf)


def _estimate(
    kpts0: Array, kpts1: Array, K0: Array, K1: Array, norm_thresh: float, conf: float
) -> PoseEstimate:
    """The rest of SuperGlue's ``estimate_pose`` (glue-factory's is the same code), given the
    threshold over the mean focal length."""
    import cv2  # lazy: the command line's start does not load OpenCV

    kpts0 = (kpts0 - K0[[0, 1], [2, 2]][None]) / K0[[0, 1], [0, 1]][None]
    kpts1 = (kpts1 - K1[[0, 1], [2, 2]][None]) / K1[[0, 1], [0, 1]][None]
    E, mask = cv2.findEssentialMat(
        kpts0, kpts1, np.eye(3), threshold=norm_thresh, prob=conf, method=cv2.RANSAC
    )
    if E is None:
        return None
    best_num_inliers = 0
    ret: PoseEstimate = None
    for _E in np.split(E, len(E) // 3):  # SuperGlue: len(E) / 3, a multiple of 3
        n, R, t, _ = cv2.recoverPose(_E, kpts0, kpts1, np.eye(3), 1e9, mask=mask)
        if n > best_num_inliers:
            best_num_inliers = n
            ret = (R, t[:, 0], mask.ravel() > 0)
    return ret


def angle_error_mat(R1: Array, R2: Array) -> float:
    """The angle in degrees of the rotation R1^T R2 (SuperGlue's ``angle_error_mat``)."""
    cos = (np.trace(np.dot(R1.T, R2)) - 1) / 2
    cos = np.clip(cos, -1.0, 1.0)
    return float(np.rad2deg(np.abs(np.arccos(cos))))


def angle_error_vec(v1: Array, v2: Array) -> float:
    """The angle in degrees between two vectors (SuperGlue's ``angle_error_vec``)."""
    n = np.linalg.norm(v1) * np.linalg.norm(v2)
    return float(np.rad2deg(np.arccos(np.clip(np.dot(v1, v2) / n, -1.0, 1.0))))


def pose_errors(T_0to1: Array, R: Array, t: Array) -> tuple[float, float]:
    """(translation error, rotation error) in degrees of the estimate (R, t) against the
    true 4 x 4 ``T_0to1``: SuperGlue's ``compute_pose_error``, the translation angle folded
    as ``min(e, 180 - e)``."""
    error_t = angle_error_vec(t, T_0to1[:3, 3])
    error_t = float(np.minimum(error_t, 180 - error_t))
    error_R = angle_error_mat(R, T_0to1[:3, :3])
    return error_t, error_R
