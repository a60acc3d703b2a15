"""Step runs made directly, as a training loop's evaluations at its steps will make them: the
run ``EXP/NAME@STEP`` ingested with its run's params and tags, linked by a ``run_steps`` row.
One helper, so that the tests switch to ``Store.log_lists`` in one place."""

from __future__ import annotations

from typing import Any

from conftest import ranked

from evalstore import Store


def add_steps(
    store: Store,
    run: str,
    steps: list[int],
    *,
    params: dict[str, Any] | None = None,
    tags: list[str] | None = None,
    seed: int = 100,
) -> dict[int, int]:
    """Ingest the retrieval runs ``RUN@STEP`` (each its own rows) and link them to ``run``,
    which must exist; returns {step: step run id}."""
    parent = store.resolve(run)
    made = {}
    for k, step in enumerate(steps):
        store.ingest(
            ranked(seed=seed + k),
            task="retrieval",
            run=f"{run}@{step}",
            params=params or {},
            tags=tags or [],
        )
        made[step] = store.resolve(f"{run}@{step}")
        store.con.execute(
            "insert into run_steps (step_run_id, run_id, step) values (?, ?, ?)",
            [made[step], parent, step],
        )
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
    ids["steps"] = add_steps(store, "exp/r", [0, 1, 2], params={"lr": 0.1, "seed": 0})
    return ids
