"""The homographies estimated from keypoint matches, made on first use
(evalstore.analysis.estimates): the same floats as an ingest that estimates them, made once,
refused or made for the export alone on a read-only store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest

from evalstore import Store
from evalstore.analysis import estimates, eval_store
from evalstore.analysis.evaluate import evaluate
from evalstore.core import geometry
from evalstore.errors import InvalidInput
from evalstore.metrics.registry import METRICS
from evalstore.scale.export import export_runs, partition_path
from evalstore.scale.importer import import_runs

ESTIMATED = ["reprojection_error", "homography_accuracy", "homography_accuracy_superpoint"]
E_R = [f"{m}{i}{j}" for m in "er" for i in (1, 2, 3) for j in (1, 2, 3)]


def _data(n_pairs: int = 6, n_matches: int = 120) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(5)
    pair = np.repeat(np.arange(n_pairs), n_matches)
    rng.shuffle(pair)
    hs = np.tile(np.eye(3), (n_pairs, 1, 1))
    hs[:, :2, 2] = rng.uniform(-20, 20, (n_pairs, 2))
    hs[:, 2, :2] = rng.normal(0, 1e-4, (n_pairs, 2))
    x0, y0 = rng.uniform(0, 320, pair.size), rng.uniform(0, 240, pair.size)
    gx, gy = geometry.transfer(hs[pair], x0, y0)
    x1, y1 = gx + rng.normal(0, 1.5, pair.size), gy + rng.normal(0, 1.5, pair.size)
    out = rng.random(pair.size) < 0.25
    x1[out] = rng.uniform(0, 320, int(out.sum()))
    names = np.array([f"p{k}" for k in range(n_pairs)])
    matches = pl.DataFrame({"pair_id": names[pair], "x0": x0, "y0": y0, "x1": x1, "y1": y1})
    pairs = pl.DataFrame(
        {
            "pair_id": [*names, "lonely"],  # a pair without matches: no estimate
            **{
                f"h{i + 1}{j + 1}": [*hs[:, i, j], 1.0 * (i == j)]
                for i in range(3)
                for j in range(3)
            },
            "width": [320] * (n_pairs + 1),
            "height": [240] * (n_pairs + 1),
        }
    )
    return matches, pairs


def _ingest(store: Store, run: str, **options: Any) -> int:
    matches, pairs = _data()
    return store.ingest_keypoints(matches, pairs=pairs, run=run, git_commit=None, **options).run_id


def _pairs(store: Store, run_id: int) -> list[tuple[Any, ...]]:
    cols = ", ".join([*E_R, "n_inliers", "e_direction", "estimated"])
    return store.con.execute(
        f"select pair_id, {cols} from pairs where run_id = $r order by pair_id", {"r": run_id}
    ).fetchall()


def _pending(store: Store) -> int:
    return int(store.con.execute("select count(*) from pairs where not estimated").fetchall()[0][0])


def _values(store: Store, run: str) -> dict[tuple[str, str, str], float]:
    frame = evaluate(store, [run], metrics=ESTIMATED, by=["pair"])
    return {(r["metric"], r["slice"], r["params"]): r["value"] for r in frame.iter_rows(named=True)}


def test_lazy_estimates_are_the_floats_an_estimating_ingest_stores(tmp_path: Path) -> None:
    with Store(tmp_path / "s.duckdb") as store:
        eager = _ingest(store, "k/eager", estimate=True)
        lazy = _ingest(store, "k/lazy")
        assert _pending(store) == 7  # the lazy run's pairs, none of the eager run's
        stored = [row[:-1] for row in _pairs(store, eager)]
        assert [row[-1] for row in _pairs(store, eager)] == [True] * 7
        want, got = _values(store, "k/eager"), _values(store, "k/lazy")
        assert _pending(store) == 0
        assert [row[:-1] for row in _pairs(store, lazy)] == stored  # bit for bit
    assert got == want and len(want) > 3 * 6
    assert any(v is not None and v > 0 for v in want.values())
    lonely = next(row for row in stored if row[0] == "lonely")
    assert lonely[1:] == (None,) * 20  # too few matches: no estimate, no inlier count


def test_estimates_are_made_once_and_only_for_metrics_that_read_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = geometry.estimate_pairs

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(len(args[4]) - 1)
        return real(*args, **kwargs)

    monkeypatch.setattr(geometry, "estimate_pairs", counted)
    with Store(tmp_path / "s.duckdb") as store:
        _ingest(store, "k/a")
        assert calls == []  # ingest estimates nothing
        evaluate(store, ["k/a"], metrics=["precision_at_sigma", "mma"])
        assert calls == [] and _pending(store) == 7
        evaluate(store, ["k/a"], metrics=["reprojection_error"])
        assert calls == [7] and _pending(store) == 0
        evaluate(store, ["k/a"], metrics=ESTIMATED, recompute=True)
        assert calls == [7]


def test_a_read_only_store_refuses_to_evaluate_pending_estimates(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with Store(path) as store:
        _ingest(store, "k/a")
    with Store(path, read_only=True) as ro, pytest.raises(InvalidInput) as caught:
        evaluate(ro, ["k/a"], metrics=["reprojection_error"])
    message = str(caught.value)
    assert "run k/a" in message and "--estimate" in message and "\n" not in message
    with Store(path) as store:
        assert _pending(store) == 7  # nothing was written


def test_an_export_carries_the_estimates_spark_reads(tmp_path: Path) -> None:
    """Spark reads e/r from the export: a read-only store makes them for the export alone,
    a writable one keeps them; an import brings them back bit for bit."""
    path = tmp_path / "s.duckdb"
    with Store(path) as store:
        run_id = _ingest(store, "k/a")
        want = _pairs(store, _ingest(store, "k/b", estimate=True))  # the same matches
    with Store(path, read_only=True) as ro:
        export_runs(ro, tmp_path / "ro")
    with Store(path) as store:
        assert _pending(store) == 7  # the read-only export wrote nothing to the store
        export_runs(store, tmp_path / "rw")
        assert _pending(store) == 0  # a writable store keeps what it made
        assert [r[:-1] for r in _pairs(store, run_id)] == [r[:-1] for r in want]
        estimated = _pairs(store, run_id)
    for folder in ("ro", "rw"):
        part = pq.read_table(partition_path(tmp_path / folder, "pairs", run_id) / "part-0.parquet")
        assert part["estimated"].to_pylist() == [True] * 7
        assert part["r11"].null_count == 1  # only the pair without matches
        with Store(tmp_path / f"{folder}.duckdb") as copy:
            import_runs(copy, tmp_path / folder)
            assert _pending(copy) == 0
            new_id = copy.resolve("k/a")
            assert sorted(_pairs(copy, new_id)) == sorted(estimated)


def test_the_metrics_that_need_estimates_are_those_whose_sql_reads_them() -> None:
    reads = {
        name
        for name, m in METRICS.items()
        if m.source == "pairs" and any(c in m.query.text for c in ("r11", "e11", "n_inliers"))
    }
    assert reads == set(estimates.NEEDS_ESTIMATES)


def test_an_interrupt_before_the_values_leaves_no_estimates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The estimates made on first use commit with the values they serve: a Ctrl-C between
    them (here, as the values are written) leaves the store as it was, not half done."""

    def interrupted(*args: Any, **kwargs: Any) -> str:
        raise KeyboardInterrupt

    with Store(tmp_path / "s.duckdb") as store:
        _ingest(store, "k/a")
        monkeypatch.setattr(eval_store, "params_text", interrupted)
        with pytest.raises(KeyboardInterrupt):
            evaluate(store, ["k/a"], metrics=["reprojection_error"])
        assert _pending(store) == 7  # no estimate kept
        assert store.con.execute("select count(*) from metric_values").fetchall() == [(0,)]
        monkeypatch.undo()
        evaluate(store, ["k/a"], metrics=["reprojection_error"])
        assert _pending(store) == 0
