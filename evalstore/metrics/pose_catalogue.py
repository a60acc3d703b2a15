"""The metrics of image pairs with cameras (relative pose) and of the homographies' corner
errors as matcher papers report them, without their twins: each one's direction, how its run
value is made, what it reads, and the rules its protocol sets (:class:`PoseRules`).

A pose metric reads the relative poses estimated from each pair's matches (``pose_estimates``,
made on first use by :mod:`evalstore.analysis.pose_estimates`) with one estimation setting:
the method, the RANSAC threshold in pixels and the confidence. Those are the protocol's
(:attr:`evalstore.metrics.protocols.Protocol.pose`), else SuperGlue's (:data:`DEFAULT_RULES`),
and every value records them in its ``params`` (:meth:`PoseRules.params`), so values of two
settings are cached apart and never compared. Under glue-factory's rules several thresholds
are estimated and the one of the largest mAA is kept (``sql/lib/pose_best.sql``); which one it
was is the value of ``pose_ransac_threshold`` under the same params: a value's params are its
cache key, known before its SQL runs, and cannot hold what the SQL finds.

>>> DEFAULT_RULES.params()
{'confidence': 0.99999, 'method': 'opencv', 'ransac_threshold': 1.0}
>>> POSE["pose_auc"].overall, POSE["epipolar_precision"].overall
('run row', 'mean')
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from evalstore.errors import InvalidInput

__all__ = [
    "AUC_CODES",
    "DEFAULT_RULES",
    "EPIPOLAR_THRESHOLDS",
    "ESTIMATED",
    "GLUEFACTORY_RANSAC_SWEEP",
    "HOMOGRAPHY_AUC_THRESHOLDS",
    "IMC_DEGREES",
    "POSE",
    "POSE_AUC_THRESHOLDS",
    "RULED",
    "Line",
    "PoseRules",
    "rules_of",
]

#: pose_auc's thresholds in degrees (SuperGlue, LoFTR, glue-factory report 5, 10, 20)
POSE_AUC_THRESHOLDS = (5.0, 10.0, 20.0)
#: homography_auc's thresholds in pixels (glue-factory's and LightGlue's HPatches table)
HOMOGRAPHY_AUC_THRESHOLDS = (1.0, 3.0, 5.0)
#: the epipolar threshold of a correct match (SuperGlue's; LoFTR's MegaDepth uses 1e-4)
EPIPOLAR_THRESHOLDS = (5e-4,)
#: IMC's mAA up to 10 degrees (qt_auc_10; 5 gives qt_auc_05)
IMC_DEGREES = (10.0,)
#: whose floating-point steps the AUC follows (sql/lib/error_auc.sql)
AUC_CODES = ("superglue", "loftr", "gluefactory")
#: the RANSAC thresholds (pixels) glue-factory sweeps when ``eval.ransac_th`` is -1
#: (``gluefactory/eval/megadepth1500.py``, ``scannet1500.py``, ``hpatches.py`` ``run_eval``)
GLUEFACTORY_RANSAC_SWEEP = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0)


@dataclass(frozen=True)
class PoseRules:
    """The estimation setting of the poses a metric reads, and whose AUC code it follows.

    Attributes:
        method: the estimator (``opencv``: SuperGlue's ``estimate_pose``;
            ``opencv_gluefactory``: glue-factory's, the threshold over the mean of the four
            focal lengths).
        ransac_thresholds: the RANSAC threshold in pixels; several: glue-factory's sweep, the
            one of the largest mAA kept.
        confidence: RANSAC's confidence.
        auc: ``superglue`` (``pose_auc``), ``loftr`` (``error_auc``: the recall by
            ``np.linspace``) or ``gluefactory`` (``cal_error_auc``: rounded to 4 decimals).
    """

    method: str = "opencv"
    ransac_thresholds: tuple[float, ...] = (1.0,)
    confidence: float = 0.99999
    auc: str = "superglue"

    def __post_init__(self) -> None:
        if self.auc not in AUC_CODES:
            known = ", ".join(AUC_CODES)
            raise InvalidInput(f"PoseRules auc {self.auc!r}: expected one of {known}")
        swept = self.ransac_thresholds
        if not swept or any(b <= a for a, b in itertools.pairwise(swept)):
            # the SQL keeps the smallest of equal mAAs, the twin the first: the same if sorted
            raise InvalidInput(
                f"PoseRules ransac_thresholds {swept}: give at least one, in ascending order"
            )

    def params(self) -> dict[str, Any]:
        """What a value of a metric that reads the estimates records of the setting in its
        ``params``: the threshold, or the list of those swept."""
        swept = self.ransac_thresholds
        threshold: float | list[float] = swept[0] if len(swept) == 1 else list(swept)
        return {"confidence": self.confidence, "method": self.method, "ransac_threshold": threshold}

    def describe(self) -> str:
        """The rules in a line (``evalstore protocols``).

        >>> PoseRules(ransac_thresholds=(0.5, 1.0)).describe()
        "opencv at 0.5, 1 px, confidence 0.99999; superglue's AUC"
        """
        swept = ", ".join(f"{t:g}" for t in self.ransac_thresholds)
        return f"{self.method} at {swept} px, confidence {self.confidence:g}; {self.auc}'s AUC"

    def binds(self) -> dict[str, Any]:
        """The values of the SQL's ``$method``, ``$ransac_thresholds``, ``$confidence`` and
        ``$auc``."""
        return {
            "method": self.method,
            "ransac_thresholds": [float(t) for t in self.ransac_thresholds],
            "confidence": self.confidence,
            "auc": self.auc,
        }


#: SuperGlue's evaluation (match_pairs.py: estimate_pose at 1 px, confidence 0.99999): the
#: rules outside a protocol
DEFAULT_RULES = PoseRules()


def rules_of(rules: PoseRules | None) -> PoseRules:
    """The rules given (a protocol's), else :data:`DEFAULT_RULES`."""
    return DEFAULT_RULES if rules is None else rules


@dataclass(frozen=True)
class Line:
    """One metric of this family.

    Attributes:
        higher_is_better: its direction.
        overall: ``mean`` (the run's value is the mean over its pairs) or ``run row`` (the
            SQL's row of group NULL: an AUC or a median of the pairs' errors).
        source: ``cameras`` (pairs with cameras: ``pair_cameras``, ``pose_estimates``,
            ``matches``) or ``pairs`` (the homography estimates).
        sweep: its sweep's default values (the column ``threshold``), or None.
        whole: the sweep takes whole numbers (IMC's degrees).
        doc: what it is, in a line.
    """

    higher_is_better: bool
    overall: str
    source: str
    sweep: tuple[float, ...] | None
    doc: str
    whole: bool = False


POSE: dict[str, Line] = {
    "pose_error": Line(False, "run row", "cameras", None,
                       "max(err_t, err_R) per pair in degrees; the run's: their median"),
    "pose_auc": Line(True, "run row", "cameras", POSE_AUC_THRESHOLDS,
                     "AUC of the pose errors up to 5/10/20 degrees (SuperGlue's pose_auc)"),
    "pose_maa": Line(True, "run row", "cameras", None,
                     "mean of the pose AUCs at 5, 10, 20 degrees (glue-factory's mAA)"),
    "pose_maa_imc": Line(True, "run row", "cameras", IMC_DEGREES,
                         "IMC's stereo mAA: mean accuracy at 1..10 degrees", whole=True),
    "pose_ransac_threshold": Line(False, "run row", "cameras", None,
                                  "the RANSAC threshold (px) the pose values are read at"),
    "homography_auc": Line(True, "run row", "pairs", HOMOGRAPHY_AUC_THRESHOLDS,
                           "AUC of the homographies' corner errors up to 1/3/5 px"),
    "epipolar_precision": Line(True, "mean", "cameras", EPIPOLAR_THRESHOLDS,
                               "share of a pair's matches with epipolar distance < 5e-4"),
    "matching_score": Line(True, "mean", "cameras", EPIPOLAR_THRESHOLDS,
                           "a pair's correct matches over its keypoints in image 0"),
}  # fmt: skip

#: the metrics that read the pose estimates: their values record the setting in ``params``
ESTIMATED = frozenset({"pose_error", "pose_auc", "pose_maa", "pose_maa_imc",
                       "pose_ransac_threshold"})  # fmt: skip
#: the metrics whose SQL takes :meth:`PoseRules.binds` (the AUCs follow ``$auc``)
RULED = frozenset({*ESTIMATED, "homography_auc"})
