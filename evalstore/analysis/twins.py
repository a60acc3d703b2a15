"""The twin test of a user's metric (``evalstore metric test``): its SQL against its Python
twin on random runs of ranked lists, in a temporary store."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from evalstore.analysis.run_draws import read_ranked
from evalstore.core.points import TIES
from evalstore.errors import InvalidInput
from evalstore.metrics import registry as metrics
from evalstore.metrics.registry import Params
from evalstore.metrics.user import RANKED_TASKS, compute
from evalstore.store.facade import Store

__all__ = ["check_twin"]


def check_twin(name: str, *, seeds: int = 20) -> list[str]:
    """Compare a user's metric's SQL with its Python twin on ``seeds`` random runs of ranked
    lists (ties, ignored and unretrieved items, lists without positives), under every tie
    policy its SQL takes. Returns one line per disagreement (none: they agree).

    Raises:
        InvalidInput: not a user's metric, no twin, or not a metric of ranked lists.
    """
    metric = metrics.get(name)
    if metric.path is None:
        raise InvalidInput(f"{metric.name} is built in: tests/test_parity.py checks it")
    if metric.source != "scores":
        raise InvalidInput(
            f"{metric.name}: the twin test draws ranked lists; it reads {metric.source}"
        )
    problems: list[str] = []
    ties = TIES if "$ties" in metric.query.text else ("grouped",)
    task = next(t for t in metric.tasks if t in RANKED_TASKS)
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "twin.duckdb") as store:
        for seed in range(seeds):
            lists = _random_lists(np.random.default_rng(seed))
            run = store.ingest(lists, task=task, run=f"twin/s{seed}", labels="pm1", git_commit=None)
            inputs = read_ranked(store, run.run_id, task)
            for tie in ties:
                params = Params(ties=tie, k=metric.defaults.get("k"))
                values = metric.sql_params([run.run_id], task, params)
                frame = pl.DataFrame(compute(store.con, metric, [run.run_id], values))
                got = {g: v for g, v in zip(frame["group_id"], frame["value"], strict=True)}
                want = metric.reference(inputs, params)
                for g, v in zip(want.group.tolist(), want.value.tolist(), strict=True):
                    key = None if g is None else str(g)
                    have = got.get(key)
                    if not _same(have, v):
                        problems.append(
                            f"seed {seed}, ties {tie}, list {key}: SQL {have}, twin {v}"
                        )
    return problems


def _same(have: float | None, want: float) -> bool:
    if have is None or (isinstance(have, float) and math.isnan(have)):
        return math.isnan(want)
    return not math.isnan(want) and math.isclose(have, want, rel_tol=1e-12, abs_tol=1e-15)


def _random_lists(rng: np.random.Generator) -> dict[str, Any]:
    n_lists = int(rng.integers(1, 8))
    lengths = rng.integers(1, 25, n_lists)
    group = np.repeat(np.arange(n_lists), lengths)
    scores = rng.integers(0, rng.choice([2, 4, 1000]), group.size) / 3.0
    scores[rng.random(group.size) < 0.15] = -np.inf
    labels = rng.choice([-1, -1, 0, 1], group.size)
    return {"group_id": group, "item_id": np.arange(group.size), "score": scores, "label": labels}
