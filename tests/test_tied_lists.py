"""Lists with tied scores, larger than the parity suite's: the metric SQL that reads them by tie
group (sql/metrics/ap_ranked.sql, lib/graded_ranks.sql, lib/dcg.sql: counts per score, no sort
of every row) against a plain one-sort computation.

- ``ap`` under every per-rank policy equals, bit for bit, the VLFeat formula on the rows sorted
  by the policy's keys (score descending; optimistic: positives first, pessimistic: negatives
  first, docid: the item id's UTF-8 text greater first; then input order), its terms j / i
  added as sum_exact adds them (each times 2^90 as an integer, exact here since i < 2^37).
- the graded and first-hit metrics equal the NumPy core (evalstore.core.graded) to 1e-12 under
  every policy, at several cut-offs.

The lists hold tie groups of every kind: positives and negatives mixed, positives only,
negatives only, single items, items not retrieved and ignored ones; scores as float32 and
float64, ids as integers and as text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalstore import Store
from evalstore.core.graded import WITH_K, per_list_graded
from evalstore.db import queries
from evalstore.metrics.registry import METRICS

POLICIES = ("optimistic", "pessimistic", "input", "docid")
GRADED_METRICS = ("ndcg", "ndcg_at_k", "ndcg_exp", "ndcg_exp_at_k", "recip_rank", "hit_at_k")


def _rows(seed: int, text_ids: bool, graded: bool) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    parts: list[dict[str, np.ndarray]] = []
    for g in range(12):
        n = int(rng.integers(1, 400))
        score = rng.integers(0, int(rng.integers(1, 12)), n).astype(np.float64)
        label = rng.choice(np.array([1, -1, 0]), n, p=[0.35, 0.55, 0.1])
        if g == 0:
            label[:] = 1  # every group positives only
        if g == 1:
            label[label == 1] = -1  # no positive
        if g == 2:
            score = np.arange(n, dtype=np.float64)  # no ties
        score[rng.random(n) < 0.08] = -np.inf  # not retrieved
        ids = rng.permutation(20 * n)[:n] - (7 if seed % 2 else 0)
        part = {
            "group_id": np.full(n, f"q{g}"),
            "item_id": np.array([f"d{i}" for i in ids]) if text_ids else ids.astype(np.int64),
            "score": score,
            "label": label.astype(np.int8),
        }
        if graded:
            part["gain"] = rng.integers(0, 4, n).astype(np.float64)
        parts.append(part)
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


CASES = [(0, False, False, "float32"), (1, True, True, "float64"), (2, False, True, "float32")]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"seed{c[0]}-{c[3]}")
def stored(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    seed, text_ids, graded, dtype = request.param
    rows = _rows(seed, text_ids, graded)
    rows["score"] = rows["score"].astype(dtype)
    folder = Path(tmp_path_factory.mktemp("tied"))
    pq.write_table(pa.table(rows), folder / "rows.parquet")
    with Store(folder / "t.duckdb") as store:
        store.ingest(folder / "rows.parquet", task="retrieval", run="tied", git_commit=None)
        yield store, rows


def _sql(store: Store, metric: str, ties: str, k: int = 10) -> dict[str, float | None]:
    query = METRICS[metric].query_for(ties)
    run_id = store.con.execute("select run_id from runs where name = 'tied'").fetchone()[0]
    params = {"runs": [run_id], "task": "retrieval", "ties": ties, "k": k}
    got = store.con.execute(query.text, queries.bind(query.text, params)).fetchall()
    return {str(group): value for _, group, value in got}


def _ap_one_sort(rows: dict[str, np.ndarray], ties: str) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for group in np.unique(rows["group_id"]):
        here = np.flatnonzero(rows["group_id"] == group)
        n_pos = int((rows["label"][here] == 1).sum())
        keep = here[(rows["label"][here] != 0) & np.isfinite(rows["score"][here].astype(float))]
        ranked = sorted(keep.tolist(), key=lambda row: _sort_key(rows, ties, row))
        total, j = 0, 0
        for i, row in enumerate(ranked, start=1):
            if rows["label"][row] == 1:
                j += 1
                total += int(np.float64(j) / np.float64(i) * 2.0**90)  # exact: an integer
        out[str(group)] = None if n_pos == 0 else float(total) * 2.0**-90 / float(n_pos)
    return out


def _sort_key(rows: dict[str, np.ndarray], ties: str, row: int) -> tuple[Any, ...]:
    """Score descending, the policy's key, then input order (the row's position)."""
    label = int(rows["label"][row])
    tie = {"optimistic": -label, "pessimistic": label}.get(ties, 0)
    docid = _Desc(str(rows["item_id"][row]).encode()) if ties == "docid" else 0
    return (-float(rows["score"][row]), tie, docid, row)


class _Desc:
    """Bytes ordered greater first."""

    def __init__(self, value: bytes) -> None:
        self.value = value

    def __lt__(self, other: _Desc) -> bool:
        return self.value > other.value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Desc) and self.value == other.value


@pytest.mark.parametrize("ties", POLICIES)
def test_ap_per_rank_equals_one_sort_bit_for_bit(stored: Any, ties: str) -> None:
    store, rows = stored
    assert _sql(store, "ap", ties) == _ap_one_sort(rows, ties)


@pytest.mark.parametrize("ties", ("grouped", *POLICIES))
@pytest.mark.parametrize("metric", GRADED_METRICS)
def test_graded_metrics_equal_the_numpy_core(stored: Any, metric: str, ties: str) -> None:
    store, rows = stored
    group_codes, groups = np.unique(rows["group_id"], return_inverse=True)
    gains = rows.get("gain")
    order = None
    if ties == "docid":
        text = [str(i).encode() for i in rows["item_id"].tolist()]
        ranked = sorted(range(len(text)), key=lambda i: text[i], reverse=True)
        order = np.empty(len(text), dtype=np.int64)
        order[ranked] = np.arange(len(text))
    for k in (1, 5, 60) if metric in WITH_K else (None,):
        got = _sql(store, metric, ties, k or 10)
        codes, want = per_list_graded(
            metric,
            groups,
            rows["score"].astype(np.float64),
            rows["label"],
            gains=gains,
            ties=ties,
            k=k,
            order=order,
        )
        assert sorted(got) == sorted(str(group_codes[c]) for c in codes)
        for code, value in zip(codes, want, strict=True):
            sql = got[str(group_codes[code])]
            if np.isnan(value):
                assert sql is None, (metric, ties, k, group_codes[code])
            else:
                assert sql == pytest.approx(float(value), rel=1e-12, abs=1e-12), (metric, ties, k)
