"""What the pose metrics' NumPy twins read of one run (source ``cameras``): its image pairs
with cameras, their matches and their stored pose estimates, as arrays.

>>> import numpy as np
>>> run = PoseRun(pairs=np.array(["a"], dtype=object), k0=np.eye(3)[None], k1=np.eye(3)[None],
...               t=np.eye(4)[None, :3], n_keypoints0=np.array([np.nan]),
...               pair=np.array([], dtype=object), x0=np.zeros(0), y0=np.zeros(0),
...               x1=np.zeros(0), y1=np.zeros(0), est_pair=np.array(["a"], dtype=object),
...               est_method=np.array(["opencv"], dtype=object), est_threshold=np.array([1.0]),
...               est_confidence=np.array([0.99999]), err_t=np.array([2.0]),
...               err_r=np.array([np.inf]))
>>> run.pairs.size, float(run.err_r[0])
(1, inf)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["K0_COLUMNS", "K1_COLUMNS", "T_COLUMNS", "PoseRun"]

#: A pair's cameras as the pairs table and ``pair_cameras`` hold them: K0 and K1 row-major, and
#: the first three rows of T_0to1 (its last is 0 0 0 1).
K0_COLUMNS = tuple(f"k0_{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3))
K1_COLUMNS = tuple(f"k1_{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3))
T_COLUMNS = tuple(f"t_{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3, 4))


@dataclass(frozen=True)
class PoseRun:
    """The image pairs with cameras of one run (tables ``pair_cameras``, ``matches``,
    ``pose_estimates``).

    Attributes:
        pairs: (P,) the pair ids of the pairs with cameras.
        k0, k1: (P, 3, 3) the intrinsics of images 0 and 1.
        t: (P, 3, 4) the true relative pose ``[R | t]``, camera 0 -> camera 1.
        n_keypoints0: (P,) float64 the keypoints of image 0, NaN where not given.
        pair: (n,) the pair id of each match (any pair of the run), in input order.
        x0, y0, x1, y1: (n,) float64 the match ``(x0, y0)`` in image 0 -> ``(x1, y1)``.
        est_pair: (m,) the pair id of each stored estimate.
        est_method, est_threshold, est_confidence: (m,) its setting.
        err_t, err_r: (m,) its errors in degrees (+inf: estimation failed).
    """

    pairs: np.ndarray
    k0: np.ndarray
    k1: np.ndarray
    t: np.ndarray
    n_keypoints0: np.ndarray
    pair: np.ndarray
    x0: np.ndarray
    y0: np.ndarray
    x1: np.ndarray
    y1: np.ndarray
    est_pair: np.ndarray
    est_method: np.ndarray
    est_threshold: np.ndarray
    est_confidence: np.ndarray
    err_t: np.ndarray
    err_r: np.ndarray
