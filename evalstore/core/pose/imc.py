"""The mean average accuracy (mAA) of the Image Matching Challenge's stereo track, as its
benchmark code computes it.

ubc-vision/image-matching-benchmark ``utils/pack_helper.py`` ``compute_qt_auc`` @
e3c1cbd6bf5cfea5f272e310e8b70a34ded572d5: per pair the pose error ``max(err_q, err_t)`` in
degrees, a failed pair's +inf replaced by 1e6, ``np.histogram`` over the bins
``np.arange(11)`` (``[0, 1), [1, 2), ..., [8, 9), [9, 10]``: the last one closed), divided by
the number of pairs and accumulated::

    qt_acc[k] = fraction of pairs with error < k + 1   (k = 0..8)
    qt_acc[9] = fraction of pairs with error <= 10
    qt_auc_05 = mean(qt_acc[:5])      qt_auc_10 = mean(qt_acc)     (the mAA at 5 and 10 deg)

So an error of exactly 3 degrees is accurate at 4 degrees, not at 3 (SuperGlue's AUC counts an
error equal to a threshold), and exactly 10 is accurate at 10. IMC's own per-pair errors come
from quaternions and normalised translations with a floor (``utils/eval_helper.py``
``evaluate_R_t``: ``loss = max(1e-15, 1 - dot^2)``), in radians; this function takes
the errors in degrees, whatever computed them (e.g. ``max(err_t, err_R)`` of
:func:`~evalstore.core.pose.pose_errors`). No pairs: 0 (the benchmark's ``[0] * 10``).

glue-factory's "mAA" is another number: the mean of its AUCs at 5, 10, 20 degrees
(:func:`~evalstore.core.pose.maa_gluefactory`).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from evalstore.core.pose.auc import error_array
from evalstore.errors import InvalidInput

__all__ = ["accuracy_imc", "maa_imc"]

ArrayLike = npt.ArrayLike


def accuracy_imc(errors: ArrayLike) -> list[float]:
    """IMC's cumulative pose accuracy ``qt_acc`` at 1, 2, ..., 10 degrees (module docstring).

    Args:
        errors: one pose error per pair in degrees (>= 0), +inf where the estimate failed.

    Returns:
        Ten fractions in [0, 1], non-decreasing; ten zeros for no pairs.

    Raises:
        InvalidInput: an error NaN, negative, or not 1-D.

    0.5 and 2 degrees, a failure: 1/3 accurate at 1 and 2 degrees, 2/3 from 3 degrees:

    >>> [round(a, 4) for a in accuracy_imc([0.5, 2.0, float("inf")])]
    [0.3333, 0.3333, 0.6667, 0.6667, 0.6667, 0.6667, 0.6667, 0.6667, 0.6667, 0.6667]
    """
    err_qt = error_array(errors).copy()  # a copy: failures are set to 1e6 below
    if len(err_qt) == 0:
        return [0.0] * 10
    # compute_qt_auc, line for line (the errors already in degrees)
    err_qt[err_qt == np.inf] = 1e6
    bars = np.arange(11)
    qt_hist, _ = np.histogram(err_qt, bars)
    num_pair = float(len(err_qt))
    qt_hist = qt_hist.astype(float) / num_pair
    qt_acc = np.cumsum(qt_hist)
    return [float(a) for a in qt_acc]


def maa_imc(errors: ArrayLike, up_to: int = 10) -> float:
    """IMC's stereo mAA: the mean of :func:`accuracy_imc` at 1..``up_to`` degrees
    (``qt_auc_10`` for 10, the challenge's headline number; ``qt_auc_05`` for 5).

    Args:
        errors: as in :func:`accuracy_imc`.
        up_to: the largest threshold in degrees, a whole number 1..10.

    Returns:
        The mAA in [0, 1].

    Raises:
        InvalidInput: as :func:`accuracy_imc`, or ``up_to`` outside 1..10.

    >>> maa_imc([0.5, 2.0, float("inf")], up_to=5)  # (1/3 + 1/3 + 2/3 + 2/3 + 2/3) / 5
    0.5333333333333333
    """
    if up_to not in range(1, 11):
        raise InvalidInput(f"IMC's mAA goes up to 1..10 degrees, got {up_to}")
    qt_acc = accuracy_imc(errors)
    return float(np.mean(qt_acc[:up_to]))
