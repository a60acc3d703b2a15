"""The demo: a database of evaluation runs recorded over several weeks."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np

from evalstore.store import Progress, Store

__all__ = ["build"]


def _retrieval_run(
    rng: np.random.Generator, quality: float, n_queries: int = 50, n_items: int = 200
) -> dict[str, np.ndarray]:
    group = np.repeat(np.arange(n_queries), n_items)
    item = np.tile(np.arange(n_items), n_queries)
    label = np.where(rng.random(group.size) < 0.05, 1, -1)
    label[(item % 17) == 0] = 0  # same-sequence distractors are ignored
    score = rng.standard_normal(group.size) + quality * (label == 1)
    return {"group_id": group, "item_id": item, "score": score, "label": label}


def build(store: Store, *, seed: int = 0, progress: Progress | None = None) -> list[str]:
    """Ingest a few seeded runs (replacing earlier demo runs); returns their names."""
    rng = np.random.default_rng(seed)
    start = datetime(2026, 1, 5, 9, 0)
    names = []
    for week, quality in enumerate([0.5, 1.0, 1.5, 1.25, 2.0]):
        name = f"demo/descriptor-v{week + 1}"
        store.ingest(
            _retrieval_run(rng, quality),
            task="retrieval",
            run=name,
            replace=True,
            params={"margin": quality, "epochs": 10 * (week + 1)},
            tags=["demo"],
            created_at=start + timedelta(weeks=week),
            git_commit=None,
            progress=progress,
        )
        names.append(name)
    return names
