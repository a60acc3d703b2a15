"""Step runs as a training loop's evaluations at its steps make them (``Store.log_lists``):
the run ``EXP/NAME@STEP`` with its run's params and tags, linked by a ``run_steps`` row."""

from __future__ import annotations

from typing import Any

from conftest import ranked

from evalstore import Store


def add_steps(store: Store, run: str, steps: list[int], *, seed: int = 100) -> dict[int, int]:
    """Log retrieval rows (each step its own) at ``steps`` of ``run``, which must exist, with
    ``Store.log_lists``: the step runs ``RUN@STEP`` with the run's params and tags, linked by
    ``run_steps``; returns {step: step run id}."""
    made = {}
    for k, step in enumerate(steps):
        store.log_lists(run, ranked(seed=seed + k), task="retrieval", step=step)
        made[step] = store.resolve(f"{run}@{step}")
    return made


def training_store(store: Store) -> dict[str, Any]:
    """A store of experiment ``exp``: the run ``exp/r`` (lr 0.1, seed 0) with 3 step runs
    (steps 0, 1, 2), its seed ``exp/r-s1`` (lr 0.1, seed 1) and ``exp/other`` (lr 0.2, seed
    0), each an ordinary retrieval run; returns their ids (``steps``: {step: id})."""
    ids: dict[str, Any] = {}
    for k, (name, params) in enumerate(
        [
            ("r", {"lr": 0.1, "seed": 0}),
            ("r-s1", {"lr": 0.1, "seed": 1}),
            ("other", {"lr": 0.2, "seed": 0}),
        ]
    ):
        store.ingest(ranked(seed=k), task="retrieval", run=f"exp/{name}", params=params)
        ids[name] = store.resolve(f"exp/{name}")
    ids["steps"] = add_steps(store, "exp/r", [0, 1, 2])
    return ids
