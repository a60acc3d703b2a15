"""The pose and homography evaluation code of SuperGlue, LoFTR, glue-factory and the Image
Matching Challenge, transcribed line by line into Python (NumPy; torch tensors become float64
arrays).

Sources (the mirrors' HEAD):

- magicleap/SuperGluePretrainedNetwork ``models/utils.py`` and ``match_pairs.py`` @
  ddcf11f42e7e0732a0c4607648f9448ea8d73590;
- zju3dv/LoFTR ``src/utils/metrics.py`` @ df7ca80f917334b94cfbe32cc2901e09a80e70a8;
- cvg/glue-factory ``gluefactory/utils/tools.py`` (``cal_error_auc``, ``AUCMetric``),
  ``gluefactory/eval/utils.py`` (``eval_poses``), ``gluefactory/geometry/homography.py``
  (``homography_corner_error``), ``gluefactory/geometry/utils.py`` (``to_homogeneous``,
  ``from_homogeneous``), ``gluefactory/robust_estimators/relative_pose/opencv.py`` @
  2d17e3b3bd7d30f0c828d4c4d3eac4ecefbf283d;
- ubc-vision/image-matching-benchmark ``utils/pack_helper.py`` (``compute_qt_auc``) @
  e3c1cbd6bf5cfea5f272e310e8b70a34ded572d5.

Changes, each marked where it is made: ``np.trapz`` -> ``np.trapezoid`` (NumPy 2 removed the
old name; the same function), torch -> NumPy in glue-factory's and LoFTR's tensor code, and the
I/O around the arithmetic (files, dictionaries of results, logging) left out.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

# ------------------------------------------------------------------------ SuperGlue


def sg_estimate_pose(kpts0, kpts1, K0, K1, thresh, conf=0.99999):
    """models/utils.py estimate_pose."""
    if len(kpts0) < 5:
        return None

    f_mean = np.mean([K0[0, 0], K1[1, 1], K0[0, 0], K1[1, 1]])
    norm_thresh = thresh / f_mean

    kpts0 = (kpts0 - K0[[0, 1], [2, 2]][None]) / K0[[0, 1], [0, 1]][None]
    kpts1 = (kpts1 - K1[[0, 1], [2, 2]][None]) / K1[[0, 1], [0, 1]][None]

    E, mask = cv2.findEssentialMat(
        kpts0, kpts1, np.eye(3), threshold=norm_thresh, prob=conf, method=cv2.RANSAC
    )

    assert E is not None

    best_num_inliers = 0
    ret = None
    for _E in np.split(E, len(E) / 3):
        n, R, t, _ = cv2.recoverPose(_E, kpts0, kpts1, np.eye(3), 1e9, mask=mask)
        if n > best_num_inliers:
            best_num_inliers = n
            ret = (R, t[:, 0], mask.ravel() > 0)
    return ret


def sg_angle_error_mat(R1, R2):
    cos = (np.trace(np.dot(R1.T, R2)) - 1) / 2
    cos = np.clip(cos, -1.0, 1.0)  # numercial errors can make it out of bounds
    return np.rad2deg(np.abs(np.arccos(cos)))


def sg_angle_error_vec(v1, v2):
    n = np.linalg.norm(v1) * np.linalg.norm(v2)
    return np.rad2deg(np.arccos(np.clip(np.dot(v1, v2) / n, -1.0, 1.0)))


def sg_compute_pose_error(T_0to1, R, t):
    R_gt = T_0to1[:3, :3]
    t_gt = T_0to1[:3, 3]
    error_t = sg_angle_error_vec(t, t_gt)
    error_t = np.minimum(error_t, 180 - error_t)  # ambiguity of E estimation
    error_R = sg_angle_error_mat(R, R_gt)
    return error_t, error_R


def sg_to_homogeneous(points):
    return np.concatenate([points, np.ones_like(points[:, :1])], axis=-1)


def sg_compute_epipolar_error(kpts0, kpts1, T_0to1, K0, K1):
    kpts0 = (kpts0 - K0[[0, 1], [2, 2]][None]) / K0[[0, 1], [0, 1]][None]
    kpts1 = (kpts1 - K1[[0, 1], [2, 2]][None]) / K1[[0, 1], [0, 1]][None]
    kpts0 = sg_to_homogeneous(kpts0)
    kpts1 = sg_to_homogeneous(kpts1)

    t0, t1, t2 = T_0to1[:3, 3]
    t_skew = np.array([[0, -t2, t1], [t2, 0, -t0], [-t1, t0, 0]])
    E = t_skew @ T_0to1[:3, :3]

    Ep0 = kpts0 @ E.T  # N x 3
    p1Ep0 = np.sum(kpts1 * Ep0, -1)  # N
    Etp1 = kpts1 @ E  # N x 3
    d = p1Ep0**2 * (
        1.0 / (Ep0[:, 0] ** 2 + Ep0[:, 1] ** 2) + 1.0 / (Etp1[:, 0] ** 2 + Etp1[:, 1] ** 2)
    )
    return d


def sg_pose_auc(errors, thresholds):
    sort_idx = np.argsort(errors)
    errors = np.array(errors.copy())[sort_idx]
    recall = (np.arange(len(errors)) + 1) / len(errors)
    errors = np.r_[0.0, errors]
    recall = np.r_[0.0, recall]
    aucs = []
    for t in thresholds:
        last_index = np.searchsorted(errors, t)
        r = np.r_[recall[:last_index], recall[last_index - 1]]
        e = np.r_[errors[:last_index], t]
        aucs.append(np.trapezoid(r, x=e) / t)  # np.trapz
    return aucs


def sg_match_pairs_matching(mkpts0, mkpts1, kpts0, T_0to1, K0, K1):
    """match_pairs.py, the matching half of one pair's evaluation (lines 315-319)."""
    epi_errs = sg_compute_epipolar_error(mkpts0, mkpts1, T_0to1, K0, K1)
    correct = epi_errs < 5e-4
    num_correct = np.sum(correct)
    precision = np.mean(correct) if len(correct) > 0 else 0
    matching_score = num_correct / len(kpts0) if len(kpts0) > 0 else 0
    return epi_errs, precision, matching_score, num_correct


def sg_match_pairs_pose(mkpts0, mkpts1, T_0to1, K0, K1):
    """match_pairs.py, the pose half of one pair's evaluation (lines 321-327)."""
    thresh = 1.0  # In pixels relative to resized image size.
    ret = sg_estimate_pose(mkpts0, mkpts1, K0, K1, thresh)
    if ret is None:
        err_t, err_R = np.inf, np.inf
    else:
        R, t, inliers = ret  # noqa: RUF059
        err_t, err_R = sg_compute_pose_error(T_0to1, R, t)
    return err_t, err_R


def sg_match_pairs_pair(mkpts0, mkpts1, kpts0, T_0to1, K0, K1):
    """match_pairs.py, the evaluation of one pair (lines 315-335)."""
    epi_errs, precision, matching_score, num_correct = sg_match_pairs_matching(
        mkpts0, mkpts1, kpts0, T_0to1, K0, K1
    )
    err_t, err_R = sg_match_pairs_pose(mkpts0, mkpts1, T_0to1, K0, K1)
    return {
        "error_t": err_t,
        "error_R": err_R,
        "precision": precision,
        "matching_score": matching_score,
        "num_correct": num_correct,
        "epipolar_errors": epi_errs,
    }


def sg_match_pairs_summary(results: list[dict[str, Any]]) -> list[float]:
    """match_pairs.py, the collated table (lines 403-421), before the * 100."""
    pose_errors = []
    precisions = []
    matching_scores = []
    for res in results:
        pose_error = np.maximum(res["error_t"], res["error_R"])
        pose_errors.append(pose_error)
        precisions.append(res["precision"])
        matching_scores.append(res["matching_score"])
    thresholds = [5, 10, 20]
    aucs = sg_pose_auc(pose_errors, thresholds)
    prec = np.mean(precisions)
    ms = np.mean(matching_scores)
    return [*aucs, prec, ms]


# ------------------------------------------------------------------------ LoFTR


def loftr_relative_pose_error(T_0to1, R, t, ignore_gt_t_thr=0.0):
    # angle error between 2 vectors
    t_gt = T_0to1[:3, 3]
    n = np.linalg.norm(t) * np.linalg.norm(t_gt)
    t_err = np.rad2deg(np.arccos(np.clip(np.dot(t, t_gt) / n, -1.0, 1.0)))
    t_err = np.minimum(t_err, 180 - t_err)  # handle E ambiguity
    if np.linalg.norm(t_gt) < ignore_gt_t_thr:  # pure rotation is challenging
        t_err = 0

    # angle error between 2 rotation matrices
    R_gt = T_0to1[:3, :3]
    cos = (np.trace(np.dot(R.T, R_gt)) - 1) / 2
    cos = np.clip(cos, -1.0, 1.0)  # handle numercial errors
    R_err = np.rad2deg(np.abs(np.arccos(cos)))

    return t_err, R_err


def loftr_symmetric_epipolar_distance(pts0, pts1, E, K0, K1):
    """torch -> NumPy: convert_points_to_homogeneous pads a column of ones, torch.sum is np.sum."""
    pts0 = (pts0 - K0[[0, 1], [2, 2]][None]) / K0[[0, 1], [0, 1]][None]
    pts1 = (pts1 - K1[[0, 1], [2, 2]][None]) / K1[[0, 1], [0, 1]][None]
    pts0 = np.concatenate([pts0, np.ones_like(pts0[:, :1])], axis=-1)
    pts1 = np.concatenate([pts1, np.ones_like(pts1[:, :1])], axis=-1)

    Ep0 = pts0 @ E.T  # [N, 3]
    p1Ep0 = np.sum(pts1 * Ep0, -1)  # [N,]
    Etp1 = pts1 @ E  # [N, 3]

    d = p1Ep0**2 * (
        1.0 / (Ep0[:, 0] ** 2 + Ep0[:, 1] ** 2) + 1.0 / (Etp1[:, 0] ** 2 + Etp1[:, 1] ** 2)
    )  # N
    return d


def loftr_essential(T_0to1):
    """compute_symmetrical_epipolar_errors: ``Tx = cross_product_matrix(t); E = Tx @ R``
    (kornia's cross_product_matrix is [[0, -z, y], [z, 0, -x], [-y, x, 0]])."""
    x, y, z = T_0to1[:3, 3]
    Tx = np.array([[0, -z, y], [z, 0, -x], [-y, x, 0]])
    return Tx @ T_0to1[:3, :3]


def loftr_estimate_pose(kpts0, kpts1, K0, K1, thresh, conf=0.99999):
    if len(kpts0) < 5:
        return None
    # normalize keypoints
    kpts0 = (kpts0 - K0[[0, 1], [2, 2]][None]) / K0[[0, 1], [0, 1]][None]
    kpts1 = (kpts1 - K1[[0, 1], [2, 2]][None]) / K1[[0, 1], [0, 1]][None]

    # normalize ransac threshold
    ransac_thr = thresh / np.mean([K0[0, 0], K1[1, 1], K0[0, 0], K1[1, 1]])

    # compute pose with cv2
    E, mask = cv2.findEssentialMat(
        kpts0, kpts1, np.eye(3), threshold=ransac_thr, prob=conf, method=cv2.RANSAC
    )
    if E is None:
        return None  # LoFTR prints a line first

    # recover pose from E
    best_num_inliers = 0
    ret = None
    for _E in np.split(E, len(E) / 3):
        n, R, t, _ = cv2.recoverPose(_E, kpts0, kpts1, np.eye(3), 1e9, mask=mask)
        if n > best_num_inliers:
            ret = (R, t[:, 0], mask.ravel() > 0)
            best_num_inliers = n

    return ret


def loftr_error_auc(errors, thresholds):
    """
    Args:
        errors (list): [N,]
        thresholds (list)
    """
    errors = [0] + sorted(list(errors))  # noqa: RUF005
    recall = list(np.linspace(0, 1, len(errors)))

    aucs = []
    thresholds = [5, 10, 20]
    for thr in thresholds:
        last_index = np.searchsorted(errors, thr)
        y = recall[:last_index] + [recall[last_index - 1]]  # noqa: RUF005
        x = errors[:last_index] + [thr]  # noqa: RUF005
        aucs.append(np.trapezoid(y, x) / thr)  # np.trapz

    return {f"auc@{t}": auc for t, auc in zip(thresholds, aucs)}  # noqa: B905


def loftr_epidist_prec(errors, thresholds, ret_dict=False):
    precs = []
    for thr in thresholds:
        prec_ = []
        for errs in errors:
            correct_mask = errs < thr
            prec_.append(np.mean(correct_mask) if len(correct_mask) > 0 else 0)
        precs.append(np.mean(prec_) if len(prec_) > 0 else 0)
    if ret_dict:
        return {f"prec@{t:.0e}": prec for t, prec in zip(thresholds, precs)}  # noqa: B905
    else:
        return precs


# ------------------------------------------------------------------------ glue-factory


def gf_cal_error_auc(errors, thresholds):
    sort_idx = np.argsort(errors)
    errors = np.array(errors.copy())[sort_idx]
    recall = (np.arange(len(errors)) + 1) / len(errors)
    errors = np.r_[0.0, errors]
    recall = np.r_[0.0, recall]
    aucs = []
    for t in thresholds:
        last_index = np.searchsorted(errors, t)
        r = np.r_[recall[:last_index], recall[last_index - 1]]
        e = np.r_[errors[:last_index], t]
        aucs.append(np.round((np.trapezoid(r, x=e) / t), 4))  # np.trapz
    return aucs


class GfAUCMetric:
    """gluefactory/utils/tools.py AUCMetric (its torch ``update`` left out)."""

    def __init__(self, thresholds, elements=None):
        self._elements = elements
        self.thresholds = thresholds
        if not isinstance(thresholds, list):
            self.thresholds = [thresholds]

    def compute(self):
        if len(self._elements) == 0:
            return np.nan
        else:
            return gf_cal_error_auc(self._elements, self.thresholds)


def gf_eval_poses(pose_results, auc_ths, key, unit="°"):
    """gluefactory/eval/utils.py eval_poses (its prints left out)."""
    pose_aucs = {}
    best_th = -1
    for th, results_i in pose_results.items():
        pose_aucs[th] = GfAUCMetric(auc_ths, results_i[key]).compute()
    mAAs = {k: np.mean(v) for k, v in pose_aucs.items()}
    best_th = max(mAAs, key=mAAs.get)

    summaries = {}

    for i, ath in enumerate(auc_ths):
        summaries[f"{key}@{ath}{unit}"] = pose_aucs[best_th][i]
    summaries[f"{key}_mAA"] = mAAs[best_th]

    for k, v in pose_results[best_th].items():
        arr = np.array(v)
        if not np.issubdtype(np.array(v).dtype, np.number):
            continue
        summaries[f"m{k}"] = round(np.median(arr), 3)
    return summaries, best_th


def gf_to_homogeneous(points):
    pad = np.ones((points.shape[:-1] + (1,)), dtype=points.dtype)  # noqa: RUF005
    return np.concatenate([points, pad], axis=-1)


def gf_from_homogeneous(points, eps=0.0):
    return points[..., :-1] / (points[..., -1:] + eps)


def gf_homography_corner_error(T, T_gt, image_size):
    """torch -> NumPy: ``torch.Tensor(...).float().to(T)`` is a float64 array here."""
    W, H = image_size[..., 0], image_size[..., 1]
    corners0 = np.array([[0, 0], [W, 0], [W, H], [0, H]], dtype=np.float64)
    corners1_gt = gf_from_homogeneous(gf_to_homogeneous(corners0) @ T_gt.transpose(-1, -2))
    corners1 = gf_from_homogeneous(gf_to_homogeneous(corners0) @ T.transpose(-1, -2))
    d = np.sqrt(((corners1 - corners1_gt) ** 2).sum(-1))
    return d.mean(-1)


def gf_sym_epipolar_distance(p0, p1, E, squared=True):
    """gluefactory/geometry/epipolar.py sym_epipolar_distance (torch -> NumPy: einsum is
    np.einsum, ``.clamp(min=1e-6)`` np.maximum, ``.abs()`` np.abs)."""
    assert p0.shape[-2] == p1.shape[-2]
    if p0.shape[-2] == 0:
        return np.zeros(p0.shape[:-1])
    if p0.shape[-1] != 3:
        p0 = gf_to_homogeneous(p0)
    if p1.shape[-1] != 3:
        p1 = gf_to_homogeneous(p1)
    p1_E_p0 = np.einsum("...ni,...ij,...nj->...n", p1, E, p0)
    E_p0 = np.einsum("...ij,...nj->...ni", E, p0)
    Et_p1 = np.einsum("...ij,...ni->...nj", E, p1)
    d0 = np.maximum(E_p0[..., 0] ** 2 + E_p0[..., 1] ** 2, 1e-6)
    d1 = np.maximum(Et_p1[..., 0] ** 2 + Et_p1[..., 1] ** 2, 1e-6)
    if squared:
        d = p1_E_p0**2 * (1 / d0 + 1 / d1)
    else:
        d = np.abs(p1_E_p0) * (1 / np.sqrt(d0) + 1 / np.sqrt(d1)) / 2
    return d


def gf_epi_prec(kpts0, kpts1, T_0to1, K0, K1, th):
    """eval_matches_epipolar's ``epi_prec@th``: generalized_epi_dist(..., all=False,
    essential=True) (``T_to_E`` = skew_symmetric(t) @ R, ``image2cam`` = (p - c) / f, z = 1),
    then ``(n_epi_err < th).float().mean().nan_to_num()`` (the mean of none is NaN -> 0)."""
    t = T_0to1[:3, 3]
    E = np.array([[0, -t[2], t[1]], [t[2], 0, -t[0]], [-t[1], t[0], 0]]) @ T_0to1[:3, :3]
    p0 = gf_to_homogeneous((kpts0 - K0[[0, 1], [2, 2]][None]) / K0[[0, 1], [0, 1]][None])
    p1 = gf_to_homogeneous((kpts1 - K1[[0, 1], [2, 2]][None]) / K1[[0, 1], [0, 1]][None])
    n_epi_err = gf_sym_epipolar_distance(p0, p1, E, squared=False)
    return n_epi_err, float(np.nan_to_num(np.mean(n_epi_err < th))) if len(n_epi_err) else 0.0


def gf_opencv_relative_pose(kpts0, kpts1, K0, K1, ransac_th, confidence=0.99999):
    """robust_estimators/relative_pose/opencv.py _forward, float64 arrays for the tensors:
    ``camera.f`` = (fx, fy), ``image2cam`` then ``from_homogeneous`` = (p - c) / f."""
    M, inl = None, np.zeros_like(kpts0[:, 0]).astype(bool)

    if len(kpts0) >= 5:
        f_mean = np.concatenate([K0[[0, 1], [0, 1]], K1[[0, 1], [0, 1]]]).mean()
        norm_thresh = ransac_th / f_mean

        pts0 = (kpts0 - K0[[0, 1], [2, 2]][None]) / K0[[0, 1], [0, 1]][None]
        pts1 = (kpts1 - K1[[0, 1], [2, 2]][None]) / K1[[0, 1], [0, 1]][None]

        E, mask = cv2.findEssentialMat(
            pts0, pts1, np.eye(3), threshold=norm_thresh, prob=confidence, method=cv2.RANSAC
        )

        if E is not None:
            best_num_inliers = 0
            for _E in np.split(E, len(E) / 3):
                n, R, t, _ = cv2.recoverPose(_E, pts0, pts1, np.eye(3), 1e9, mask=mask)
                if n > best_num_inliers:
                    best_num_inliers = n
                    inl = mask.ravel() > 0
                    M = (R, t[:, 0])

    return {"success": M is not None, "M_0to1": M, "inliers": inl}


# ------------------------------------------------------------------------ IMC


def imc_qt_auc(err_qt_deg):
    """utils/pack_helper.py compute_qt_auc, for one threshold's errors (err_q, err_t) given in
    degrees (the benchmark stores radians and converts them: that line is a comment here):
    (qt_acc, qt_auc_05, qt_auc_10)."""
    err_qt = err_qt_deg
    if len(err_qt) > 0:
        err_qt = np.asarray(err_qt)
        # Take the maximum among q and t errors
        err_qt = np.max(err_qt, axis=1)
        # Convert to degree
        # err_qt = err_qt * 180.0 / np.pi   (already in degrees)
        # Make infs to a large value so that np.histogram can be used.
        err_qt[err_qt == np.inf] = 1e6

        # Create histogram
        bars = np.arange(11)
        qt_hist, _ = np.histogram(err_qt, bars)
        # Normalize histogram with all possible pairs
        num_pair = float(len(err_qt))
        qt_hist = qt_hist.astype(float) / num_pair

        # Make cumulative
        qt_acc = np.cumsum(qt_hist)
    else:
        qt_acc = [0] * 10
    return list(qt_acc), np.mean(qt_acc[:5]), np.mean(qt_acc)
