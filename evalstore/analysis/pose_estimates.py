"""The relative poses estimated from each image pair's matches, made when first needed.

Keypoint ingest stores a pair's cameras (``pair_cameras``: K0, K1 and the true T_0to1) beside
its matches; the pose of each pair and estimation setting (:class:`PoseSetting`: method,
RANSAC threshold in pixels, confidence) is made by :func:`ensure_pose_estimates` the first
time a metric that reads it is evaluated for the run, inside that evaluation's write
transaction, and stored in ``pose_estimates``: later evaluations read it. The matches are
read in the order ingest gave them (``seq``), as SuperGlue's ``match_pairs.py``
(magicleap/SuperGluePretrainedNetwork @ ddcf11f42e7e) hands its valid matches to
``estimate_pose``; the error is its ``compute_pose_error``
(:func:`evalstore.core.pose.pose_errors`). A failed estimate (fewer than 5 matches, no
essential matrix) is stored with NULL R and t, infinite errors and 0 inliers. A pair without
cameras gets no row.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import duckdb
import numpy as np
import polars as pl

from evalstore.core import pose
from evalstore.db import queries
from evalstore.errors import InvalidInput
from evalstore.metrics.pose_inputs import K0_COLUMNS, K1_COLUMNS, T_COLUMNS

if TYPE_CHECKING:
    from evalstore.db.connection import Database

__all__ = ["METHODS", "PoseSetting", "ensure_pose_estimates"]

#: the estimation methods, both OpenCV's 5-point RANSAC then recoverPose: "opencv" is
#: SuperGlue's estimate_pose (the threshold over mean(fx0, fy1, fx0, fy1)), "opencv_gluefactory"
#: glue-factory's opencv estimator (over the mean of the four focal lengths)
_ESTIMATORS = {"opencv": "estimate_pose", "opencv_gluefactory": "estimate_pose_gluefactory"}
METHODS = frozenset(_ESTIMATORS)

_R = tuple(f"r{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3))
_TV = ("t1", "t2", "t3")


@dataclass(frozen=True)
class PoseSetting:
    """How a relative pose is estimated: ``method`` (:data:`METHODS`), the RANSAC ``threshold``
    in pixels (divided by the method's mean focal length) and its ``confidence``.
    The default is SuperGlue's evaluation (1 px, 0.99999)."""

    method: str = "opencv"
    threshold: float = 1.0
    confidence: float = 0.99999

    def check(self) -> None:
        """Raise :class:`InvalidInput` naming what is wrong with the setting."""
        if self.method not in METHODS:
            raise InvalidInput(
                f"pose estimation method {self.method!r} is unknown (known: "
                f"{', '.join(sorted(METHODS))})"
            )
        if not (math.isfinite(self.threshold) and self.threshold > 0):
            raise InvalidInput(
                f"pose estimation threshold {self.threshold} must be a positive number of pixels"
            )
        if not (0 < self.confidence < 1):
            raise InvalidInput(
                f"pose estimation confidence {self.confidence} must lie strictly between 0 and 1"
            )


def ensure_pose_estimates(
    store: Database, run_ids: Sequence[int], settings: Sequence[PoseSetting], *, needed_by: str
) -> int:
    """Make and store the pose estimates that the runs' pairs with cameras lack for each of
    ``settings``; call it inside a transaction of ``store``. Returns the number of estimates
    made and stored (0: every one was there already).

    The pending pairs' cameras and matches are read with one query each, whatever the number
    of runs, pairs and settings.

    Args:
        needed_by: what needs them (a metric's name), for the message of a read-only store.

    Raises:
        InvalidInput: a setting with an unknown method, a threshold that is not positive or a
            confidence outside (0, 1); a read-only store with estimates to make (it cannot
            store them).
    """
    wanted = list(dict.fromkeys(settings))
    for setting in wanted:
        setting.check()
    if not wanted or not run_ids:
        return 0
    pending = queries.fetch(
        store.con,
        "store/pose_pending",
        {
            "runs": list(run_ids),
            "methods": [s.method for s in wanted],
            "thresholds": [float(s.threshold) for s in wanted],
            "confidences": [float(s.confidence) for s in wanted],
        },
    )
    if pending.height == 0:
        return 0
    if store.read_only:
        raise InvalidInput(
            f"run {pending['run'][0]}: {needed_by} needs the relative poses estimated from its "
            "matches, which are made on first use and stored; evaluate it once on a writable "
            "store (not read-only)"
        )
    rows = _estimate(store, pending["run_id"].to_numpy(), pending["pair_no"].to_numpy(),
                     pending["k"].to_numpy(), wanted)  # fmt: skip
    con = store.con
    con.register("_pose_estimates", rows)
    try:
        queries.run(con, "store/insert_pose_estimates")
    finally:
        # in a transaction that an error or a Ctrl-C aborted this fails too, and would
        # stand in for what stopped it
        with contextlib.suppress(duckdb.Error):
            con.unregister("_pose_estimates")
    return rows.height


def _estimate(
    store: Database,
    run_ids: np.ndarray,
    pair_nos: np.ndarray,
    ks: np.ndarray,
    settings: Sequence[PoseSetting],
) -> pl.DataFrame:
    """The estimate of each pending (run_ids[i], pair_nos[i], settings[ks[i] - 1]), sorted
    by run and pair, as a table with the columns of ``pose_estimates``."""
    first = np.ones(run_ids.size, dtype=bool)
    first[1:] = (run_ids[1:] != run_ids[:-1]) | (pair_nos[1:] != pair_nos[:-1])
    bind = {"run_ids": run_ids[first].tolist(), "pair_nos": pair_nos[first].tolist()}
    pairs = queries.fetch(store.con, "store/pose_pairs", bind)
    matches = queries.fetch(store.con, "store/pose_matches", {"runs": np.unique(run_ids).tolist()})
    order, lo_of, hi_of = _spans(
        _pair_keys(matches["run_id"].to_numpy(), matches["pair_no"].to_numpy()),
        matches["seq"].to_numpy(),
        _pair_keys(run_ids[first], pair_nos[first]),
    )
    xy0 = np.column_stack([matches["x0"].to_numpy(), matches["y0"].to_numpy()])
    xy1 = np.column_stack([matches["x1"].to_numpy(), matches["y1"].to_numpy()])
    if order is not None:
        xy0, xy1 = xy0[order], xy1[order]
    k0 = pairs.select(K0_COLUMNS).to_numpy().reshape(-1, 3, 3)
    k1 = pairs.select(K1_COLUMNS).to_numpy().reshape(-1, 3, 3)
    t = np.zeros((pairs.height, 4, 4))
    t[:, :3, :] = pairs.select(T_COLUMNS).to_numpy().reshape(-1, 3, 4)
    t[:, 3, 3] = 1.0
    n = run_ids.size
    r_out = np.full((n, 9), np.nan)
    t_out = np.full((n, 3), np.nan)
    errors = np.full((n, 2), np.inf)
    inliers = np.zeros(n, dtype=np.int32)
    pair = np.cumsum(first) - 1  # each pending row's index in `pairs`
    for i in range(n):
        p = int(pair[i])
        lo, hi = int(lo_of[p]), int(hi_of[p])
        setting = settings[int(ks[i]) - 1]
        estimate = _pose(xy0[lo:hi], xy1[lo:hi], k0[p], k1[p], setting)
        if estimate is None:
            continue
        rot, trans, mask = estimate
        r_out[i], t_out[i] = rot.ravel(), trans
        errors[i] = pose.pose_errors(t[p], rot, trans)
        inliers[i] = int(mask.sum())
    # polars, not pyarrow: pa.array of a NumPy array imports pandas (0.4 CPU s) to ask
    # whether it is a pandas object
    chosen = [settings[int(k) - 1] for k in ks]
    columns = [
        pl.Series("run_id", run_ids, pl.Int32),
        pl.Series("pair_no", pair_nos, pl.Int32),
        pl.Series("method", [s.method for s in chosen], pl.String),
        pl.Series("threshold", [s.threshold for s in chosen], pl.Float64),
        pl.Series("confidence", [s.confidence for s in chosen], pl.Float64),
    ]
    for values, names in ((r_out, _R), (t_out, _TV)):
        for j, name in enumerate(names):
            columns.append(pl.Series(name, values[:, j], pl.Float64, nan_to_null=True))
    columns.append(pl.Series("err_t", errors[:, 0], pl.Float64))
    columns.append(pl.Series("err_r", errors[:, 1], pl.Float64))
    columns.append(pl.Series("n_inliers", inliers, pl.Int32))
    return pl.DataFrame(columns)


def _pair_keys(run_ids: np.ndarray, pair_nos: np.ndarray) -> np.ndarray:
    """(run_id, pair_no) as one int64 each, ordered as the pairs are (both are int32)."""
    return run_ids.astype(np.int64) * 2**32 + pair_nos.astype(np.int64) + 2**31


def _spans(
    keys: np.ndarray, seq: np.ndarray, wanted: np.ndarray
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """(order, lo, hi): the permutation that sorts matches by pair key and then ``seq``
    (None where they are so already, as ingest writes them), and, for each of the sorted
    ``wanted`` pair keys, its matches' rows ``lo:hi`` in that order (empty: no match)."""
    step = np.diff(keys)
    order = None
    if not np.all((step > 0) | ((step == 0) & (np.diff(seq) > 0))):
        order = np.lexsort((seq, keys))
        keys = keys[order]
    if keys.size == 0:
        return order, np.zeros(wanted.size, np.int64), np.zeros(wanted.size, np.int64)
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    ends = np.r_[starts[1:], keys.size]
    at = np.minimum(np.searchsorted(keys[starts], wanted), starts.size - 1)
    found = keys[starts[at]] == wanted
    return order, np.where(found, starts[at], 0), np.where(found, ends[at], 0)


def _pose(
    xy0: np.ndarray, xy1: np.ndarray, k0: np.ndarray, k1: np.ndarray, setting: PoseSetting
) -> pose.PoseEstimate:
    """One pair's estimate with ``setting``; None where it fails (OpenCV's error on
    degenerate input included)."""
    import cv2  # lazy: OpenCV only where a pose is estimated, not with every evaluate

    try:
        estimate = getattr(pose, _ESTIMATORS[setting.method])  # a function of core.pose
        result: pose.PoseEstimate = estimate(
            xy0, xy1, k0, k1, setting.threshold, setting.confidence
        )
        return result
    except cv2.error:
        return None
