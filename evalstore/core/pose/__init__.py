"""Relative pose and homography evaluation of keypoint matches, as the published evaluation
codes compute it (SuperGlue, LoFTR, glue-factory): the estimate and its angular error
(:mod:`~evalstore.core.pose.estimate`), the AUC of errors and glue-factory's mAA and choice of
RANSAC threshold (:mod:`~evalstore.core.pose.auc`), the epipolar error of matches, their
precision and matching score (:mod:`~evalstore.core.pose.epipolar`), and the corner error of
homographies (:mod:`~evalstore.core.pose.homography`), the Image Matching Challenge's mAA
(:mod:`~evalstore.core.pose.imc`). NumPy, OpenCV for the estimate (loaded
on first use); no I/O.
"""

from evalstore.core.pose.auc import (
    HOMOGRAPHY_AUC_THRESHOLDS,
    POSE_AUC_THRESHOLDS,
    auc_gluefactory,
    best_threshold_gluefactory,
    error_auc_loftr,
    maa_gluefactory,
    pose_auc,
)
from evalstore.core.pose.epipolar import (
    EPIPOLAR_THRESHOLD,
    epipolar_errors,
    epipolar_errors_gluefactory,
    epipolar_precision,
    matching_score,
)
from evalstore.core.pose.estimate import (
    PoseEstimate,
    angle_error_mat,
    angle_error_vec,
    estimate_pose,
    estimate_pose_gluefactory,
    pose_errors,
)
from evalstore.core.pose.homography import homography_auc, homography_corner_errors
from evalstore.core.pose.imc import accuracy_imc, maa_imc

__all__ = [
    "EPIPOLAR_THRESHOLD",
    "HOMOGRAPHY_AUC_THRESHOLDS",
    "POSE_AUC_THRESHOLDS",
    "PoseEstimate",
    "accuracy_imc",
    "angle_error_mat",
    "angle_error_vec",
    "auc_gluefactory",
    "best_threshold_gluefactory",
    "epipolar_errors",
    "epipolar_errors_gluefactory",
    "epipolar_precision",
    "error_auc_loftr",
    "estimate_pose",
    "estimate_pose_gluefactory",
    "homography_auc",
    "homography_corner_errors",
    "maa_gluefactory",
    "maa_imc",
    "matching_score",
    "pose_auc",
    "pose_errors",
]
