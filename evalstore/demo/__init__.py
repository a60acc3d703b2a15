"""The demo: real evaluation runs recorded over several weeks, metrics and dashboards.

Two experiments, from data that ships with scikit-learn and scikit-image (no network):

- ``digits``: multi-label classification, PASCAL VOC style. Real classifiers (logistic
  regression at three regularisations, naive Bayes, k-NN, two MLPs) trained on scikit-learn's
  handwritten digits; one-vs-rest scores on the held-out half make one ranked list per class,
  evaluated with VOC 2007 and 2010 AP and their mean.
- ``hpatches``: the HPatches protocol on sequences made from scikit-image's photographs with
  known homographies (viewpoint) and photometric changes (illumination); OpenCV's SIFT, ORB,
  AKAZE, BRISK and a deliberately weakened SIFT give patch verification, image matching and
  patch retrieval lists, plus real keypoint matches for precision@sigma, MMA and homography
  accuracy.

The package: :mod:`~evalstore.demo.digits` (the digits experiment),
:mod:`~evalstore.demo.sequences`, :mod:`~evalstore.demo.patches`,
:mod:`~evalstore.demo.descriptors` and :mod:`~evalstore.demo.hpatches` (the HPatches-style
data); :func:`build` records both experiments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from evalstore.demo import digits

if TYPE_CHECKING:
    from evalstore.store import Progress, Store

__all__ = ["DemoResult", "build"]

START = datetime(2026, 9, 7, 9, 30)


@dataclass
class DemoResult:
    """What the demo wrote."""

    runs: list[str] = field(default_factory=list)
    dashboards: list[Path] = field(default_factory=list)
    seconds: float = 0.0


# -- HPatches-style descriptors ------------------------------------------------------------------


def _hpatches(store: Store, quick: bool, progress: Progress | None) -> list[str]:
    from evalstore.demo.descriptors import available_descriptors
    from evalstore.demo.hpatches import hpatches_tasks, keypoint_matches
    from evalstore.demo.sequences import make_sequences

    sequences = make_sequences(n_sequences=4 if quick else 8, seed=0, size=240 if quick else 320)
    names = []
    descriptors = available_descriptors()
    for week, descriptor in enumerate(descriptors):
        tasks = hpatches_tasks(sequences, descriptor, n_patches=40 if quick else 100, seed=0)
        matches, pairs = keypoint_matches(
            sequences, descriptor, max_keypoints=250 if quick else 500
        )
        run = f"hpatches/{descriptor}"
        meta: dict[str, Any] = {
            "params": {"descriptor": descriptor, "sequences": len(sequences), "seed": 0},
            "tags": ["weakened"] if descriptor.endswith("_weak") else ["opencv"],
            "created_at": START + timedelta(weeks=week, days=2),
            "git_commit": None,
            "notes": "HPatches-style sequences from scikit-image photographs, OpenCV descriptors",
        }
        store.ingest(tasks["verification"], task="verification", run=run, replace=True, **meta)
        for task in ("matching", "retrieval"):
            groups = tasks.get(f"{task}_groups")
            store.ingest(
                tasks[task],
                task=task,
                run=run,
                append=True,
                groups=None if groups is None else pl.DataFrame(groups),
                **meta,
            )
        store.ingest(
            matches, task="keypoints", run=run, append=True, pairs=pl.DataFrame(pairs), **meta
        )
        names.append(run)
        if progress is not None:
            progress("hpatches descriptors", week + 1, len(descriptors))
    return names


def build(
    store: Store,
    *,
    out: Path | None = None,
    quick: bool = False,
    progress: Progress | None = None,
) -> DemoResult:
    """Build (or refresh) the demo runs in ``store``, compute their metrics and, with
    ``out``, write the dashboards there. ``quick`` makes a smaller demo with every task."""
    import time

    from evalstore.evaluate import evaluate

    started = time.perf_counter()
    result = DemoResult()
    result.runs += digits.ingest_runs(store, start=START, quick=quick, progress=progress)
    result.runs += _hpatches(store, quick, progress)
    evaluate(store, result.runs, by=("class",), progress=progress)
    hpatches = [r for r in result.runs if r.startswith("hpatches/")]
    evaluate(store, hpatches, by=("noise", "kind"), progress=progress)
    if out is not None:
        from evalstore.dashboards import write_dashboards

        result.dashboards = write_dashboards(store, out, progress=progress)
    result.seconds = time.perf_counter() - started
    return result
