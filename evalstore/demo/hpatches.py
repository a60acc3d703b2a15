"""The demo's ``hpatches`` experiment: the HPatches protocol on photographs, OpenCV descriptors.

:func:`ingest_runs` records one ``hpatches/<descriptor>`` run per descriptor that the installed
OpenCV provides, a week apart: the three HPatches tasks (:mod:`evalstore.demo.tasks`) and real
keypoint matches (:mod:`evalstore.demo.matches`) on sequences made from scikit-image's
photographs (:mod:`evalstore.demo.sequences`).
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import polars as pl

from evalstore.demo.descriptors import available_descriptors
from evalstore.demo.matches import keypoint_matches
from evalstore.demo.sequences import make_sequences
from evalstore.demo.tasks import hpatches_tasks
from evalstore.runs.meta import RunMeta

if TYPE_CHECKING:
    from evalstore.db.connection import Progress
    from evalstore.store.facade import Store

__all__ = ["ingest_runs"]


def ingest_runs(
    store: Store, *, start: datetime, quick: bool, progress: Progress | None
) -> list[str]:
    """Make the sequences and ingest one ``hpatches/<descriptor>`` run per available
    descriptor, the first at ``start`` plus 2 days, a week apart; ``quick`` makes fewer,
    smaller sequences with fewer patches and keypoints. Returns the run names."""
    sequences = make_sequences(n_sequences=4 if quick else 8, seed=0, size=240 if quick else 320)
    names = []
    descriptors = available_descriptors()
    for week, descriptor in enumerate(descriptors):
        tasks = hpatches_tasks(sequences, descriptor, n_patches=40 if quick else 100, seed=0)
        matches, pairs = keypoint_matches(
            sequences, descriptor, max_keypoints=250 if quick else 500
        )
        run = f"hpatches/{descriptor}"
        meta = RunMeta(
            run,
            params={"descriptor": descriptor, "sequences": len(sequences), "seed": 0},
            tags=["weakened"] if descriptor.endswith("_weak") else ["opencv"],
            created_at=start + timedelta(weeks=week, days=2),
            git_commit=None,
            notes="HPatches-style sequences from scikit-image photographs, OpenCV descriptors",
            replace=True,
        )
        store.ingest(tasks["verification"], task="verification", meta=meta)
        more = dataclasses.replace(meta, replace=False, append=True)  # the run's other tasks
        for task in ("matching", "retrieval"):
            groups = tasks.get(f"{task}_groups")
            store.ingest(
                tasks[task],
                task=task,
                meta=more,
                groups=None if groups is None else pl.DataFrame(groups),
            )
        store.ingest_keypoints(matches, meta=more, pairs=pl.DataFrame(pairs))
        names.append(run)
        if progress is not None:
            progress("hpatches descriptors", week + 1, len(descriptors))
    return names
