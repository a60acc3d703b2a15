"""The demo's ``pose`` experiment: two simulated matchers on two-view scenes with known cameras,
judged by the relative pose they let RANSAC recover, as SuperGlue's evaluation does.

:func:`ingest_runs` records one ``pose/<matcher>-seed<seed>`` run per matcher of
:data:`MATCHERS` and seed of :data:`SEEDS`, a week apart per matcher (its seeds an hour
apart), all on one set of scenes from :func:`~evalstore.demo.pose_scenes.make_scenes` (the
scenes' seed :data:`SCENE_SEED`: every run has the same image pairs and cameras, so runs are
paired pair by pair). A matcher is its pixel noise and share of outliers
(:func:`~evalstore.demo.pose_scenes.observe`); its seed draws the noise and which matches are
outliers. Each run's matches and pairs (the camera columns ``k0_11..k0_33``,
``k1_11..k1_33``, ``t_11..t_34`` and ``n_keypoints0``) are ingested with
:meth:`~evalstore.Store.ingest_keypoints`, as the hpatches runs' matches are.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import polars as pl

from evalstore.analysis.evaluate import evaluate
from evalstore.demo.pose_scenes import make_scenes, observe
from evalstore.runs.meta import RunMeta

if TYPE_CHECKING:
    from evalstore.db.connection import Progress
    from evalstore.store.facade import Store

__all__ = [
    "MATCHERS",
    "N_MATCHES",
    "N_PAIRS",
    "N_PAIRS_QUICK",
    "POSE_METRICS",
    "PROTOCOLS",
    "SCENE_SEED",
    "SEEDS",
    "Matcher",
    "evaluate_runs",
    "ingest_runs",
]


@dataclass(frozen=True)
class Matcher:
    """A simulated matcher: ``noise_px`` pixels of Gaussian noise on each coordinate of both
    images, ``outlier_ratio`` of its matches wrong."""

    name: str
    noise_px: float
    outlier_ratio: float


#: The matchers: one precise with many outliers, one coarse with few. SuperGlue's RANSAC
#: (1 px) rejects most outliers, so the coarse one is the worse by the pose AUC.
MATCHERS = (
    Matcher("sharp", noise_px=0.25, outlier_ratio=0.2),
    Matcher("coarse", noise_px=0.75, outlier_ratio=0.05),
)
#: Seeds per matcher, in both the quick and the full demo.
SEEDS = (0, 1, 2)
#: The seed of the scenes (cameras and scene points), shared by every run.
SCENE_SEED = 0
#: Image pairs of the full and the quick demo, and matches per pair.
N_PAIRS = 100
N_PAIRS_QUICK = 20
N_MATCHES = 150

#: The pose runs' metrics: what matcher papers report of relative pose (the AUC at 5, 10 and
#: 20 degrees, its mean, the median error; SuperGlue's precision and matching score) and
#: the per-match accuracy keypoint runs also have. The homography metrics of the task's
#: standard ones do not apply: a scene of several planes has no homography.
POSE_METRICS = (
    "pose_auc", "pose_maa", "pose_error", "epipolar_precision", "matching_score",
    "precision_at_sigma", "mma",
)  # fmt: skip
#: The official protocols the pose runs are also evaluated under: SuperGlue's estimates at
#: 1 px are evalstore's default setting, so its values reuse the stored poses (LoFTR's 0.5 px
#: or glue-factory's sweep would estimate every pair again, once per threshold).
PROTOCOLS = ("superglue",)


def ingest_runs(
    store: Store, *, start: datetime, quick: bool, progress: Progress | None
) -> list[str]:
    """Make the scenes, simulate the matchers and ingest one ``pose/<matcher>-seed<seed>``
    run per matcher and seed, the first at ``start`` plus 5 days, the matchers a week apart.
    ``quick`` makes fewer pairs. Returns the run names."""
    n_pairs = N_PAIRS_QUICK if quick else N_PAIRS
    scenes = make_scenes(n_pairs, seed=SCENE_SEED, n_points=N_MATCHES)
    names = []
    total = len(MATCHERS) * len(SEEDS)
    for week, matcher in enumerate(MATCHERS):
        for seed in SEEDS:
            matches, pairs = observe(
                scenes, noise_px=matcher.noise_px, outlier_ratio=matcher.outlier_ratio, seed=seed
            )
            run = f"pose/{matcher.name}-seed{seed}"
            meta = RunMeta(
                run,
                params={
                    "matcher": matcher.name,
                    "noise_px": matcher.noise_px,
                    "outlier_ratio": matcher.outlier_ratio,
                    "pairs": n_pairs,
                    "matches": N_MATCHES,
                    "seed": seed,
                },
                tags=["synthetic"],
                created_at=start + timedelta(weeks=week, days=5, hours=seed),
                git_commit=None,
                notes="two-view scenes with known cameras (points on planes at 4-11 m), "
                f"{matcher.noise_px} px noise, {matcher.outlier_ratio:.0%} outliers",
                replace=True,
            )
            store.ingest_keypoints(matches, meta=meta, pairs=pl.DataFrame(pairs))
            names.append(run)
            if progress is not None:
                progress("pose matchers", len(names), total)
    return names


def evaluate_runs(store: Store, runs: list[str], *, progress: Progress | None) -> None:
    """Compute :data:`POSE_METRICS` of the pose runs, then the metrics of :data:`PROTOCOLS`.
    The relative poses are estimated once, by the first metric that reads them, and stored:
    the protocol's values (the same setting) reuse them."""
    evaluate(store, runs, metrics=list(POSE_METRICS), progress=progress)
    for name in PROTOCOLS:
        evaluate(store, runs, protocol=name, progress=progress)
