"""The NumPy twins of the pose metrics (:mod:`evalstore.metrics.pose_catalogue`), each with
the registry's signature ``reference(inputs, params) -> Result``, and the reader of a run's
rows they take (:func:`read_pose_run`).

Each twin is the reference core's function (:mod:`evalstore.core.pose`: SuperGlue's
``pose_auc``, LoFTR's ``error_auc``, glue-factory's ``cal_error_auc`` and choice of RANSAC
threshold, IMC's mAA, SuperGlue's epipolar error, glue-factory's homography corner error)
over the stored rows of one run, at the setting of ``params.pose`` (SuperGlue's by default).
Their rows are the SQL's: an AUC, mAA or median is the run's row (group None), a precision
or score one row per pair with cameras.

>>> errors = {"a": 2.0, "b": 30.0}
>>> run = PoseRun(pairs=_ids(list(errors)), k0=np.tile(np.eye(3), (2, 1, 1)),
...               k1=np.tile(np.eye(3), (2, 1, 1)), t=np.tile(np.eye(4)[:3], (2, 1, 1)),
...               n_keypoints0=np.full(2, np.nan), pair=_ids([]), x0=np.zeros(0),
...               y0=np.zeros(0), x1=np.zeros(0), y1=np.zeros(0), est_pair=_ids(list(errors)),
...               est_method=_ids(["opencv"] * 2), est_threshold=np.ones(2),
...               est_confidence=np.full(2, 0.99999), err_t=np.array(list(errors.values())),
...               err_r=np.zeros(2))
>>> pose_auc_reference(run, Params(at=[5.0])).value.tolist()  # (2 * 0.5 / 2 + 3 * 0.5) / 5
[0.4]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from evalstore.core import pose
from evalstore.db import queries
from evalstore.errors import InvalidInput
from evalstore.metrics.pose_catalogue import (
    EPIPOLAR_THRESHOLDS,
    HOMOGRAPHY_AUC_THRESHOLDS,
    IMC_DEGREES,
    POSE_AUC_THRESHOLDS,
    PoseRules,
    rules_of,
)
from evalstore.metrics.pose_inputs import K0_COLUMNS, K1_COLUMNS, T_COLUMNS, PoseRun
from evalstore.metrics.references import Inputs, KeypointRun, Params, Reference, Result

if TYPE_CHECKING:
    import duckdb

__all__ = ["AUC", "POSE_TWINS", "PoseRun", "best_errors", "expand_pose_run", "read_pose_run"]

#: the AUC of each code (PoseRules.auc): errors, thresholds -> one AUC per threshold
AUC: dict[str, Callable[[Any, Sequence[float]], list[float]]] = {
    "superglue": pose.pose_auc,
    "loftr": pose.error_auc_loftr,
    "gluefactory": pose.auc_gluefactory,
}


def _ids(values: list[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _run(inputs: Inputs, name: str) -> PoseRun:
    if not isinstance(inputs, PoseRun):
        raise InvalidInput(f"{name} reads PoseRun, got {type(inputs).__name__}")
    return inputs


def _at(params: Params, default: tuple[float, ...]) -> list[float]:
    return [float(v) for v in (default if params.at is None else params.at)]


def best_errors(run: PoseRun, rules: PoseRules) -> tuple[float, np.ndarray, np.ndarray] | None:
    """(RANSAC threshold, pair ids, errors ``max(err_t, err_R)``) of the estimates the run's
    values are read at: the one threshold of ``rules``, or of several (glue-factory's sweep)
    the one of the largest mAA at 5/10/20 degrees, the first among equal ones
    (:func:`~evalstore.core.pose.best_threshold_gluefactory`). None: no estimate at all."""
    found: dict[float, tuple[np.ndarray, np.ndarray]] = {}
    for th in rules.ransac_thresholds:
        mine = (
            (run.est_method == rules.method)
            & (run.est_confidence == rules.confidence)
            & (run.est_threshold == th)
        )
        if mine.any():
            found[float(th)] = (run.est_pair[mine], np.maximum(run.err_t[mine], run.err_r[mine]))
    if not found:
        return None
    if len(found) == 1:
        best = next(iter(found))
    elif rules.auc == "gluefactory":
        errors = {th: e for th, (_, e) in found.items()}
        best = pose.best_threshold_gluefactory(errors, POSE_AUC_THRESHOLDS)[0]
    else:  # the same choice by another code's AUC
        maas = {th: float(np.mean(AUC[rules.auc](e, POSE_AUC_THRESHOLDS)))
                for th, (_, e) in found.items()}  # fmt: skip
        best = max(maas, key=maas.__getitem__)
    return best, *found[best]


def _run_rows(values: list[float], at: list[float] | None = None) -> Result:
    group = _ids([None] * len(values))
    return Result(group, np.asarray(values, dtype=np.float64),
                  None if at is None else np.asarray(at, dtype=np.float64))  # fmt: skip


def pose_error_reference(inputs: Inputs, params: Params) -> Result:
    """Each pair's ``max(err_t, err_R)`` at the chosen setting, and the run's median
    (``np.median``; under glue-factory's rules ``round(median, 3)`` as its summary)."""
    rules = rules_of(params.pose)
    chosen = best_errors(_run(inputs, "pose_error"), rules)
    if chosen is None:
        return _run_rows([])
    _, pairs, errors = chosen
    median = float(np.median(errors))
    if rules.auc == "gluefactory" and np.isfinite(median):
        median = float(np.round(median, 3))
    group = _ids([*pairs.tolist(), None])
    return Result(group, np.append(errors.astype(np.float64), median))


def pose_auc_reference(inputs: Inputs, params: Params) -> Result:
    """The run's pose AUC at each threshold (degrees) by the rules' code."""
    rules = rules_of(params.pose)
    at = _at(params, POSE_AUC_THRESHOLDS)
    chosen = best_errors(_run(inputs, "pose_auc"), rules)
    if chosen is None:
        return _run_rows([], [])
    return _run_rows(AUC[rules.auc](chosen[2], at), at)


def pose_maa_reference(inputs: Inputs, params: Params) -> Result:
    """The mean of the run's pose AUCs at 5, 10, 20 degrees (glue-factory's mAA:
    :func:`~evalstore.core.pose.maa_gluefactory` under its rules)."""
    rules = rules_of(params.pose)
    chosen = best_errors(_run(inputs, "pose_maa"), rules)
    if chosen is None:
        return _run_rows([])
    return _run_rows([float(np.mean(AUC[rules.auc](chosen[2], POSE_AUC_THRESHOLDS)))])


def pose_maa_imc_reference(inputs: Inputs, params: Params) -> Result:
    """IMC's stereo mAA up to each u degrees (:func:`~evalstore.core.pose.maa_imc`); NaN for
    a u beyond 1..10."""
    at = _at(params, IMC_DEGREES)
    chosen = best_errors(_run(inputs, "pose_maa_imc"), rules_of(params.pose))
    if chosen is None:
        return _run_rows([], [])
    values = [pose.maa_imc(chosen[2], up_to=int(u)) if 1 <= u <= 10 else np.nan for u in at]
    return _run_rows(values, at)


def pose_ransac_threshold_reference(inputs: Inputs, params: Params) -> Result:
    """The RANSAC threshold the run's pose values are read at."""
    chosen = best_errors(_run(inputs, "pose_ransac_threshold"), rules_of(params.pose))
    return _run_rows([] if chosen is None else [chosen[0]])


def homography_auc_reference(inputs: Inputs, params: Params) -> Result:
    """The AUC of the corner errors (:func:`~evalstore.core.pose.homography_corner_errors`)
    of the pairs with a true homography and an image size, by the rules' code; NaN without
    such pairs."""
    if not isinstance(inputs, KeypointRun):
        raise InvalidInput(f"homography_auc reads KeypointRun, got {type(inputs).__name__}")
    at = _at(params, HOMOGRAPHY_AUC_THRESHOLDS)
    known = ~np.isnan(inputs.h).any(axis=(1, 2)) & ~np.isnan(inputs.width)
    known &= ~np.isnan(inputs.height)
    if not known.any():  # no value (NULL), as the SQL gives a run without such pairs
        return _run_rows([np.nan] * len(at), at)
    errors = pose.homography_corner_errors(
        inputs.e[known], inputs.h[known], inputs.width[known], inputs.height[known]
    )
    return _run_rows(AUC[rules_of(params.pose).auc](errors, at), at)


def _per_pair(run: PoseRun, at: list[float], score: Callable[[int, np.ndarray, float], float]
              ) -> Result:  # fmt: skip
    """One row per (pair with cameras, threshold): ``score(pair index, its epipolar errors,
    threshold)``."""
    rows: list[tuple[Any, float, float]] = []
    for i, pid in enumerate(run.pairs.tolist()):
        mine = run.pair == pid
        kpts0 = np.stack([run.x0[mine], run.y0[mine]], axis=-1)
        kpts1 = np.stack([run.x1[mine], run.y1[mine]], axis=-1)
        errors = pose.epipolar_errors(kpts0, kpts1, run.t[i], run.k0[i], run.k1[i])
        rows += [(pid, t, score(i, errors, t)) for t in at]
    group = _ids([r[0] for r in rows])
    values = np.array([r[2] for r in rows], dtype=np.float64)
    return Result(group, values, np.array([r[1] for r in rows], dtype=np.float64))


def epipolar_precision_reference(inputs: Inputs, params: Params) -> Result:
    """Per pair with cameras, :func:`~evalstore.core.pose.epipolar_precision` of its matches'
    :func:`~evalstore.core.pose.epipolar_errors` at each threshold."""
    run = _run(inputs, "epipolar_precision")
    return _per_pair(run, _at(params, EPIPOLAR_THRESHOLDS),
                     lambda _, errors, t: pose.epipolar_precision(errors, t))  # fmt: skip


def matching_score_reference(inputs: Inputs, params: Params) -> Result:
    """Per pair with cameras, :func:`~evalstore.core.pose.matching_score`; NaN where the
    keypoints of image 0 were not given."""
    run = _run(inputs, "matching_score")

    def score(i: int, errors: np.ndarray, t: float) -> float:
        n = run.n_keypoints0[i]
        return np.nan if np.isnan(n) else pose.matching_score(errors, int(n), t)

    return _per_pair(run, _at(params, EPIPOLAR_THRESHOLDS), score)


#: every pose metric's twin (the registry attaches them)
POSE_TWINS: dict[str, Reference] = {
    "pose_error": pose_error_reference,
    "pose_auc": pose_auc_reference,
    "pose_maa": pose_maa_reference,
    "pose_maa_imc": pose_maa_imc_reference,
    "pose_ransac_threshold": pose_ransac_threshold_reference,
    "homography_auc": homography_auc_reference,
    "epipolar_precision": epipolar_precision_reference,
    "matching_score": matching_score_reference,
}


def _floats(frame: pl.DataFrame, columns: Sequence[str]) -> np.ndarray:
    return frame.select([pl.col(c).cast(pl.Float64) for c in columns]).to_numpy()


def read_pose_run(con: duckdb.DuckDBPyConnection, run_id: int) -> PoseRun:
    """The stored rows of run ``run_id`` that the pose twins read (``sql/eval/pose.sql``)."""
    key = {"run_id": run_id}
    cams = queries.fetch(con, "eval/pose_cameras", key)
    matches = queries.fetch(con, "eval/pose_matches", key)
    est = queries.fetch(con, "eval/pose_estimate_rows", key)
    coords = {c: matches[c].cast(pl.Float64).to_numpy() for c in ("x0", "y0", "x1", "y1")}
    return PoseRun(
        pairs=_ids(cams["pair_id"].to_list()),
        k0=_floats(cams, K0_COLUMNS).reshape(-1, 3, 3),
        k1=_floats(cams, K1_COLUMNS).reshape(-1, 3, 3),
        t=_floats(cams, T_COLUMNS).reshape(-1, 3, 4),
        n_keypoints0=cams["n_keypoints0"].cast(pl.Float64).fill_null(np.nan).to_numpy(),
        pair=_ids(matches["pair_id"].to_list()),
        est_pair=_ids(est["pair_id"].to_list()),
        est_method=_ids(est["method"].to_list()),
        est_threshold=est["threshold"].to_numpy().astype(np.float64),
        est_confidence=est["confidence"].to_numpy().astype(np.float64),
        err_t=est["err_t"].to_numpy().astype(np.float64),
        err_r=est["err_r"].to_numpy().astype(np.float64),
        **coords,
    )


def expand_pose_run(run: PoseRun, counts: np.ndarray) -> PoseRun:
    """``run`` with its ``p``-th pair present ``counts[p]`` times, each copy a pair of its own
    (numbered 0, 1, ... in pair order, copies side by side) with its matches and estimates:
    one replicate of the bootstrap over pairs (``eval --ci``). Matches of pairs without
    cameras are left out (no pose metric reads them)."""
    kept = np.repeat(np.arange(run.pairs.size), counts)
    first = np.cumsum(counts) - counts  # the first copy's number of each pair
    index = {p: i for i, p in enumerate(run.pairs.tolist())}

    def copies(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rows, new pair of each): every row of a drawn pair once per copy, by new pair,
        each copy's rows in input order."""
        code = np.array([index.get(p, -1) for p in ids.tolist()], dtype=np.int64)
        rep = np.zeros(code.size, dtype=np.int64)
        rep[code >= 0] = counts[code[code >= 0]]
        rows = np.repeat(np.arange(code.size, dtype=np.int64), rep)
        k = np.arange(rows.size, dtype=np.int64) - np.repeat(np.cumsum(rep) - rep, rep)
        new = first[code[rows]] + k
        order = np.argsort(new, kind="stable")  # stable: input order within a copy
        return rows[order], new[order].astype(np.int64)

    m, m_pair = copies(run.pair)
    e, e_pair = copies(run.est_pair)
    return PoseRun(
        pairs=np.arange(kept.size), k0=run.k0[kept], k1=run.k1[kept], t=run.t[kept],
        n_keypoints0=run.n_keypoints0[kept], pair=m_pair, x0=run.x0[m], y0=run.y0[m],
        x1=run.x1[m], y1=run.y1[m], est_pair=e_pair, est_method=run.est_method[e],
        est_threshold=run.est_threshold[e], est_confidence=run.est_confidence[e],
        err_t=run.err_t[e], err_r=run.err_r[e],
    )  # fmt: skip
