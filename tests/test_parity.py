"""Every registered metric: the SQL that evalstore runs equals its NumPy twin to 1e-12.

One test walks the registry; hypothesis generates many lists per run with heavy ties, ignored
items, lists without positives, not-retrieved items (NULL score), n_positives overrides and
one-item lists, for every tie policy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalstore import Store, queries
from evalstore.core.ranking import TIES
from evalstore.metrics import METRICS

K_VALUES = (1, 3, 50)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    with Store(Path(tmp_path_factory.mktemp("parity")) / "p.duckdb") as s:
        yield s


@st.composite
def runs(draw: Any) -> dict[str, Any]:
    n_lists = draw(st.integers(1, 8))
    lengths = draw(st.lists(st.integers(0, 25), min_size=n_lists, max_size=n_lists))
    lengths[0] = max(lengths[0], 1)  # at least one row in the run
    n = sum(lengths)
    group = np.repeat(np.arange(n_lists), lengths)
    distinct = draw(st.sampled_from([2, 4, 1000]))  # few distinct scores = heavy ties
    scores = np.array(
        draw(st.lists(st.integers(0, distinct), min_size=n, max_size=n)), dtype=np.float64
    ) / draw(st.sampled_from([1.0, 3.0, 7.0]))
    not_retrieved = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    scores[not_retrieved & (draw(st.floats(0, 1)) < 0.5)] = -np.inf
    labels = np.array(draw(st.lists(st.sampled_from([-1, -1, 0, 1]), min_size=n, max_size=n)))
    present = np.unique(group)
    override = None
    if draw(st.booleans()):
        counts = np.array([(labels[group == g] == 1).sum() for g in present])
        extra = np.array(
            draw(st.lists(st.integers(0, 5), min_size=present.size, max_size=present.size))
        )
        override = counts + extra
    return {
        "group": group,
        "scores": scores,
        "labels": labels,
        "override": override,
        "present": present,
    }


def _ingest(store: Store, data: dict[str, Any]) -> int:
    groups = None
    if data["override"] is not None:
        groups = {"group_id": data["present"], "n_positives": data["override"]}
    result = store.ingest(
        {
            "group_id": data["group"],
            "item_id": np.arange(data["group"].size),
            "score": data["scores"],
            "label": data["labels"],
        },
        task="retrieval",
        run="parity",
        replace=True,
        groups=_frame(groups),
        git_commit=None,
    )
    return result.run_id


def _frame(groups: dict[str, Any] | None) -> Any:
    import polars as pl

    return None if groups is None else pl.DataFrame(groups)


def _sql(store: Store, name: str, run_id: int, ties: str, k: int | None) -> Any:
    query = queries.load(f"metrics/{name}")
    params = {"runs": [run_id], "task": "retrieval", "ties": ties, "k": k}
    return store.con.sql(query.text, params=queries.bind(query.text, params)).pl()


@pytest.mark.parametrize("name", sorted(METRICS))
@pytest.mark.parametrize("ties", TIES)
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=runs(), k=st.sampled_from(K_VALUES))
def test_sql_equals_numpy(store: Store, name: str, ties: str, data: dict[str, Any], k: int) -> None:
    metric = METRICS[name]
    k_arg = k if "k" in metric.params else None
    run_id = _ingest(store, data)
    got = _sql(store, name, run_id, ties, k_arg)
    kwargs = {"n_positives": data["override"], "ties": ties, "order": np.arange(data["group"].size)}
    if metric.kind == "curve":
        pts = metric.reference(data["group"], data["scores"], data["labels"], **kwargs)
        positive = pts.n_positives[pts.list_index] > 0
        want = np.column_stack([pts.groups[pts.list_index], pts.recall, pts.precision])[positive]
        have = got.select(got["group_id"].cast(int), "recall", "precision").to_numpy()
        assert have.shape == want.shape
        np.testing.assert_allclose(have, want, rtol=1e-12, atol=0)
        return
    groups, values = metric.reference(
        data["group"], data["scores"], data["labels"], k=k_arg, **kwargs
    )
    sql = {int(g): v for g, v in zip(got["group_id"], got["value"], strict=True)}
    assert sorted(sql) == sorted(int(g) for g in groups)
    have = np.array([np.nan if sql[int(g)] is None else sql[int(g)] for g in groups])
    np.testing.assert_allclose(have, values, rtol=1e-12, atol=0, equal_nan=True)


def test_every_metric_has_sql_and_reference() -> None:
    for name, metric in METRICS.items():
        assert (queries.sql_dir() / "metrics" / f"{name}.sql").is_file()
        assert callable(metric.reference)
        assert metric.query.text.lstrip().startswith("--"), f"{name}.sql needs a header comment"
