"""What the conformance tests share: ranked lists as the references take them, their ingest
into a real store, the values ``evaluate(store, [run], protocol=NAME)`` computes in SQL, and
seeded generators of hard cases (ties, ignored items, unretrieved items, 1..2,000 items).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from evalstore import Store
from evalstore.analysis.evaluate import evaluate

REL = 1e-12
SWEEPS = ("threshold", "sigma", "eps")
NOT_RETRIEVED = -math.inf


@dataclass
class Ranked:
    """One ranked list in evalstore's terms: rows in input order, labels +1 / -1 / 0
    (ignored), a score of -inf = not retrieved, and an optional ``n_positives`` override."""

    group: str
    items: list[Any]
    scores: np.ndarray
    labels: np.ndarray
    n_positives: int | None = None

    def __post_init__(self) -> None:
        self.scores = np.asarray(self.scores, dtype=np.float64)
        self.labels = np.asarray(self.labels, dtype=np.int64)
        assert len(self.items) == self.scores.size == self.labels.size

    @property
    def p(self) -> int:
        return int(self.n_positives if self.n_positives is not None else (self.labels == 1).sum())


def one(scores: Sequence[float], labels: Sequence[int], group: str = "0", **kw: Any) -> Ranked:
    """A hand-written list (item ids 0, 1, 2...)."""
    return Ranked(group, list(range(len(scores))), np.array(scores), np.array(labels), **kw)


@dataclass
class Values:
    """What evalstore computed, by (metric label, sweep value): the mean over lists (label
    ``map``...), with ``(n_lists, n_skipped)``; the mean per slice value (``kind=i``...); and
    the per-list values (plain name ``ap``...), by group id."""

    means: dict[tuple[str, float | None], float | None] = field(default_factory=dict)
    counts: dict[tuple[str, float | None], tuple[int, int]] = field(default_factory=dict)
    slices: dict[tuple[str, str, float | None], float | None] = field(default_factory=dict)
    lists: dict[tuple[str, float | None], dict[str, float | None]] = field(default_factory=dict)

    def mean(self, metric: str, at: float | None = None) -> float | None:
        return self.means[(metric, at)]

    def per_list(self, metric: str, at: float | None = None) -> dict[str, float | None]:
        return self.lists.get((metric, at), {})


def ingest(
    store: Store,
    run: str,
    task: str,
    lists: Sequence[Ranked],
    *,
    labels: str | None = None,
    one_list: bool = False,
) -> None:
    """Ingest the lists, rows in their order (the ``seq`` that ``input`` ties keep), with a
    groups frame when some list overrides its number of positives. ``one_list`` (verification)
    leaves ``group_id`` out: one global list."""
    data: dict[str, Any] = {
        "item_id": [i for lst in lists for i in lst.items],
        "score": np.concatenate([lst.scores for lst in lists]),
        "label": np.concatenate([lst.labels for lst in lists]),
    }
    if labels == "01":
        data["label"] = np.where(data["label"] == 1, 1, 0)
    if not one_list:
        data["group_id"] = [lst.group for lst in lists for _ in lst.items]
    groups = None
    if any(lst.n_positives is not None for lst in lists):
        groups = pl.DataFrame(
            {
                "group_id": [lst.group for lst in lists],
                "n_positives": [lst.p for lst in lists],
            }
        )
    store.ingest(data, task=task, run=run, groups=groups, labels=labels, git_commit=None)


def values(
    store: Store,
    run: str,
    protocol: str,
    *,
    sweeps: Mapping[str, Sequence[float]] | None = None,
    by: Sequence[str] = (),
    k: int | None = None,
) -> Values:
    """``evaluate(store, [run], protocol=protocol, by=("list", *by))``, read back."""
    frame = evaluate(store, [run], protocol=protocol, by=("list", *by), sweeps=sweeps, k=k)
    out = Values()
    for row in frame.iter_rows(named=True):
        params = json.loads(row["params"])
        at = next((float(v) for k, v in params.items() if k in SWEEPS), None)
        key = (row["metric"], at)
        name, _, value = row["slice"].partition("=")
        if not row["slice"]:
            out.means[key] = row["value"]
            out.counts[key] = (row["n_lists"], row["n_skipped"])
        elif name in by:
            out.slices[(row["slice"], *key)] = row["value"]
        else:
            out.lists.setdefault(key, {})[value] = row["value"]
    return out


def open_store(tmp_path: Path, name: str = "conformance") -> Store:
    return Store(tmp_path / f"{name}.duckdb")


# ------------------------------------------------------------------------------ checks


def close(actual: float | None, expected: float, rel: float = REL) -> bool:
    """Equal to ``rel`` relative; NaN (no value) on the reference side must be None (NULL) or
    NaN on evalstore's."""
    if expected is None or (isinstance(expected, float) and math.isnan(expected)):
        return actual is None or (isinstance(actual, float) and math.isnan(actual))
    if actual is None or math.isnan(actual):
        return False
    if expected == 0:
        return actual == 0
    return abs(actual - expected) <= rel * abs(expected)


def assert_lists(
    got: Mapping[str, float | None],
    expected: Mapping[str, float],
    what: str,
    lists: Iterable[Ranked] = (),
    rel: float = REL,
) -> None:
    """Every list's value equal to its reference's; the message names the first that is
    not, with its input."""
    assert set(got) == set(expected), f"{what}: lists {sorted(set(got) ^ set(expected))}"
    inputs = {lst.group: lst for lst in lists}
    for g, e in expected.items():
        if not close(got[g], e, rel):
            lst = inputs.get(g)
            shown = (
                "" if lst is None else f" scores={lst.scores.tolist()} labels={lst.labels.tolist()}"
            )
            raise AssertionError(
                f"{what}: list {g!r}: evalstore {got[g]!r}, reference {e!r}{shown}"
            )


# --------------------------------------------------------------------------- generators


def random_lists(
    seed: int,
    n_lists: int,
    *,
    sizes: Sequence[int] | None = None,
    max_size: int = 30,
    distinct: int | None = 4,
    p_ignored: float = 0.0,
    p_unretrieved: float = 0.0,
    p_positive: float = 0.35,
    positive_required: bool = True,
    item_ids: str = "int",
    prefix: str = "",
) -> list[Ranked]:
    """Seeded lists: ``distinct`` scores per list (few: ties between positives and negatives;
    None: continuous, almost surely tie-free), labels +1 with ``p_positive``, 0 with
    ``p_ignored``, else -1; a fraction ``p_unretrieved`` at -inf. ``positive_required`` keeps
    at least one +1 per list (lists without positives have no value in evalstore and are
    checked apart). ``item_ids``: ``int`` (0, 1, ...), ``text`` (``d0``, ``d1``...)."""
    rng = np.random.default_rng(seed)
    out = []
    for g in range(n_lists):
        n = int(sizes[g % len(sizes)]) if sizes is not None else int(rng.integers(1, max_size + 1))
        if distinct is None:
            scores = rng.standard_normal(n)
        else:
            scores = rng.integers(0, distinct, size=n).astype(np.float64) / 2
        u = rng.random(n)
        labels = np.where(u < p_positive, 1, np.where(u < p_positive + p_ignored, 0, -1))
        if positive_required and not (labels == 1).any():
            labels[rng.integers(0, n)] = 1
        scores[rng.random(n) < p_unretrieved] = NOT_RETRIEVED
        ids: list[Any] = list(range(n)) if item_ids == "int" else [f"d{i}" for i in range(n)]
        out.append(Ranked(f"{prefix}{g:04d}", ids, scores, labels))
    return out


def mixed_lists(cases: Sequence[tuple[int, Mapping[str, Any]]], n_lists: int) -> list[Ranked]:
    """The lists of several generator settings ``(seed, random_lists keywords)`` in one
    run (one ingest, one evaluate), the group ids prefixed by the setting's seed."""
    return [
        lst for seed, kw in cases for lst in random_lists(seed, n_lists, prefix=f"s{seed}-", **kw)
    ]


SIZES = (1, 2, 3, 4, 5, 7, 10, 16, 17, 33, 100, 257, 1000, 2000)
