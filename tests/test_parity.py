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


RANKING = sorted(n for n, m in METRICS.items() if m.source == "scores")


@pytest.mark.parametrize("name", RANKING)
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


# -- geometric matching metrics ------------------------------------------------------------------

OFFSETS = [(0.0, 0.0), (3.0, 0.0), (0.0, -3.0), (3.0, 4.0), (1.0, 1.0), (6.0, 8.0), (0.5, 0.25)]


@st.composite
def keypoint_runs(draw: Any) -> dict[str, Any]:
    """Pairs with 0..30 matches; offsets from the truth often land exactly on a threshold
    (3, 5, 10 px); some pairs have no true homography or too few matches to estimate one."""
    n_pairs = draw(st.integers(1, 6))
    rows = []
    for p in range(n_pairs):
        n = draw(st.sampled_from([0, 3, 8, 30]))
        for _ in range(n):
            x0 = float(draw(st.integers(0, 99)))
            y0 = float(draw(st.integers(0, 79)))
            dx, dy = draw(st.sampled_from(OFFSETS))
            if draw(st.booleans()):
                dx, dy = dx + draw(st.floats(-2, 2)), dy + draw(st.floats(-2, 2))
            gx, gy = x0 + 4.0, y0 - 2.0
            rows.append((f"p{p}", x0, y0, gx + dx, gy + dy, gx, gy))
    pairs = {
        "pair_id": [f"p{p}" for p in range(n_pairs)],
        "width": [draw(st.sampled_from([100, 640])) for _ in range(n_pairs)],
        "height": [draw(st.sampled_from([80, 480])) for _ in range(n_pairs)],
    }
    with_h = [draw(st.booleans()) for _ in range(n_pairs)]
    for i in (1, 2, 3):
        for j in (1, 2, 3):
            base = [[1.0, 0.0, 4.0], [0.0, 1.0, -2.0], [0.0, 0.0, 1.0]][i - 1][j - 1]
            pairs[f"h{i}{j}"] = [base if h else None for h in with_h]
    return {"rows": rows, "pairs": pairs}


def _ingest_keypoints(store: Store, data: dict[str, Any]) -> int:
    import polars as pl

    columns = ["pair_id", "x0", "y0", "x1", "y1", "gt_x1", "gt_y1"]
    matches = (
        pl.DataFrame(data["rows"], schema=columns, orient="row")
        if data["rows"]
        else (
            pl.DataFrame(schema=dict.fromkeys(columns, pl.Float64)).with_columns(
                pl.col("pair_id").cast(pl.String)
            )
        )
    )
    if matches.height == 0:  # a run needs matches: give the first pair one
        matches = pl.DataFrame(
            [("p0", 1.0, 1.0, 5.0, -1.0, 5.0, -1.0)], schema=columns, orient="row"
        )
    pairs = pl.DataFrame(data["pairs"]).with_columns(
        [pl.col(f"h{i}{j}").cast(pl.Float64) for i in (1, 2, 3) for j in (1, 2, 3)]
    )
    return store.ingest(
        matches, task="keypoints", run="kp", replace=True, pairs=pairs, git_commit=None
    ).run_id


def _stored(store: Store, run_id: int) -> tuple[Any, Any]:
    matches = store.con.sql(
        "select pair_id, x0, y0, x1, y1, gt_x1, gt_y1 from matches where run_id = $r order by seq",
        params={"r": run_id},
    ).pl()
    pairs = store.con.sql(
        "select * from pairs where run_id = $r order by pair_id", params={"r": run_id}
    ).pl()
    return matches, pairs


def _matrices(pairs: Any, prefix: str) -> np.ndarray:
    cols = [f"{prefix}{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3)]
    return pairs.select(cols).to_numpy().astype(np.float64).reshape(-1, 3, 3)


GEOMETRY = sorted(n for n, m in METRICS.items() if m.source in ("pairs", "outcomes"))


@pytest.mark.parametrize("name", [n for n in GEOMETRY if METRICS[n].source == "pairs"])
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=keypoint_runs())
def test_geometry_sql_equals_numpy(store: Store, name: str, data: dict[str, Any]) -> None:
    metric = METRICS[name]
    run_id = _ingest_keypoints(store, data)
    matches, pairs = _stored(store, run_id)
    ids = pairs["pair_id"].to_numpy()
    query = metric.query
    params: dict[str, Any] = {"runs": [run_id]}
    if metric.sweep is not None:
        params[metric.sweep.param] = list(metric.sweep.default)
    got = store.con.sql(query.text, params=queries.bind(query.text, params)).pl()
    m = {c: matches[c].to_numpy() for c in matches.columns}
    if name in ("precision_at_sigma", "mma"):
        _, want = metric.reference(
            m["pair_id"], m["x1"], m["y1"], m["gt_x1"], m["gt_y1"], metric.sweep.default, pairs=ids
        )
    elif name == "reprojection_error":
        r = {
            pid: (None if np.isnan(h).all() else h)
            for pid, h in zip(ids, _matrices(pairs, "r"), strict=True)
        }
        _, want = metric.reference(m["pair_id"], m["x0"], m["y0"], m["x1"], m["y1"], r, pairs=ids)
    else:
        want = metric.reference(
            _matrices(pairs, "h"),
            _matrices(pairs, "e"),
            pairs["width"].to_numpy(),
            pairs["height"].to_numpy(),
            metric.sweep.default,
        )
    want = np.asarray(want, dtype=np.float64).reshape(len(ids), -1)
    sweep = [None] if metric.sweep is None else list(metric.sweep.default)
    for j, at in enumerate(sweep):
        part = got if at is None else got.filter(got[metric.sweep.column] == at)
        sql = dict(zip(part["group_id"], part["value"], strict=True))
        assert sorted(sql) == sorted(ids)
        have = np.array([np.nan if sql[i] is None else sql[i] for i in ids])
        np.testing.assert_allclose(have, want[:, j], rtol=1e-12, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("name", [n for n in GEOMETRY if METRICS[n].source == "outcomes"])
@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    counts=st.lists(
        st.tuples(st.integers(0, 50), st.integers(0, 50), st.integers(0, 50)),
        min_size=1,
        max_size=12,
    )
)
def test_outcome_sql_equals_numpy(
    store: Store, name: str, counts: list[tuple[int, int, int]]
) -> None:
    metric = METRICS[name]
    tp, fp, fn = (np.array(c, dtype=np.int64) for c in zip(*counts, strict=True))
    data = {"group_id": np.arange(len(counts)), "tp": tp, "fp": fp, "fn": fn}
    run_id = store.ingest(data, task="outcomes", run="out", replace=True, git_commit=None).run_id
    got = _sql_plain(store, metric, run_id)
    want = np.atleast_1d(metric.reference(tp, fp, fn))
    have = np.array(
        [np.nan if v is None else v for v in got.sort("group_id", nulls_last=True)["value"]]
    )
    if name == "iou":
        order = np.argsort(np.arange(len(counts)).astype(str))  # group ids sort as text
        want = want[order]
    np.testing.assert_allclose(have, want, rtol=1e-12, atol=0, equal_nan=True)


def _sql_plain(store: Store, metric: Any, run_id: int) -> Any:
    text = metric.query.text
    return store.con.sql(text, params=queries.bind(text, {"runs": [run_id]})).pl()


def test_every_metric_is_covered_by_a_parity_test() -> None:
    ranking = {n for n, m in METRICS.items() if m.source == "scores"}
    assert ranking | set(GEOMETRY) == set(METRICS)


@pytest.mark.parametrize("name", RANKING)
def test_sql_of_several_runs_at_once_equals_numpy(store: Store, name: str) -> None:
    """One query over two runs with the same group ids: every list keeps to its own run
    (windows are partitioned by list_id alone)."""
    metric = METRICS[name]
    rng = np.random.default_rng(7)
    data = {}
    for run in ("a", "b"):
        group = np.repeat(np.arange(6), 40)
        scores = np.round(rng.standard_normal(group.size), 1)  # ties
        labels = rng.choice([-1, -1, 0, 1], size=group.size)
        data[run] = (group, scores, labels)
        store.ingest(
            {"group_id": group, "item_id": np.arange(group.size), "score": scores, "label": labels},
            task="retrieval",
            run=f"several/{run}",
            replace=True,
            git_commit=None,
        )
    run_ids = {store.resolve(f"several/{run}"): run for run in ("a", "b")}
    for ties in TIES:
        k = 5 if "k" in metric.params else None
        query = queries.load(f"metrics/{name}")
        params = {"runs": sorted(run_ids), "task": "retrieval", "ties": ties, "k": k}
        got = store.con.sql(query.text, params=queries.bind(query.text, params)).pl()
        for run_id, run in run_ids.items():
            group, scores, labels = data[run]
            mine = got.filter(got["run_id"] == run_id)
            kwargs = {"ties": ties, "order": np.arange(group.size)}
            if metric.kind == "curve":
                pts = metric.reference(group, scores, labels, **kwargs)
                want = np.column_stack([pts.groups[pts.list_index], pts.recall, pts.precision])
                have = mine.select(mine["group_id"].cast(int), "recall", "precision").to_numpy()
                np.testing.assert_allclose(have, want, rtol=1e-12, atol=0)
                continue
            groups, values = metric.reference(group, scores, labels, k=k, **kwargs)
            sql = dict(zip(mine["group_id"].cast(int), mine["value"], strict=True))
            have = np.array([np.nan if sql[int(g)] is None else sql[int(g)] for g in groups])
            np.testing.assert_allclose(have, values, rtol=1e-12, atol=0, equal_nan=True)
