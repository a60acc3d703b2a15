"""The multi-label metrics (cp ... of1, their _at_k forms) through the commands: the threshold
recorded with each value as a sweep's, the top-k form's own default k, the cache, the task
they apply to, the leaderboard and compare of a run-row metric, protocol mlgcn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import snapshot

from evalstore import InvalidInput, Store
from evalstore.analysis.eval_plan import sweep_values
from evalstore.analysis.evaluate import evaluate
from evalstore.analysis.leaderboard import leaderboard
from evalstore.core import multilabel
from evalstore.metrics import multilabel_names
from evalstore.metrics.registry import METRICS

NAMES = [*multilabel.NAMES, *(f"{n}_at_k" for n in multilabel.NAMES)]


def multilabel_rows(seed: int, n_images: int = 30, n_classes: int = 5) -> dict[str, list[Any]]:
    """Logits of every class for every image, labels +1 / -1."""
    rng = np.random.default_rng(seed)
    rows: dict[str, list[Any]] = {"group_id": [], "item_id": [], "score": [], "label": []}
    for i in range(n_images):
        for c in range(n_classes):
            label = int(rng.choice([-1, 1]))
            rows["group_id"].append(f"class{c}")
            rows["item_id"].append(f"img{i}")
            rows["score"].append(round(float(rng.standard_normal() + label), 2))
            rows["label"].append(label)
    return rows


@pytest.fixture
def two_runs(store: Store) -> Store:
    for run, seed in (("m/a", 1), ("m/b", 2)):
        store.ingest(multilabel_rows(seed), task="classification", run=run, labels="pm1")
    store.ingest(
        {"group_id": ["q"] * 2, "item_id": ["x", "y"], "score": [1.0, 0.0], "label": [1, -1]},
        task="retrieval", run="m/ret", labels="pm1",
    )  # fmt: skip
    return store


def eval_json(cli: Any, *args: str) -> list[dict[str, Any]]:
    result = cli("eval", *args, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_names_agree() -> None:
    assert multilabel_names.NAMES == multilabel.NAMES
    assert set(multilabel_names.MULTILABEL_METRICS) == set(NAMES)
    for name in NAMES:
        metric = METRICS[name]
        assert metric.tasks == ("classification",) and metric.overall == "run row"
        assert metric.sweep is not None and metric.sweep.column == "threshold"
        assert metric.sweep.default == (0.5,) and metric.sweep.minimum is None
        assert (metric.default_k == 3) == name.endswith("_at_k")


def test_threshold_is_recorded_with_each_value(cli: Any, two_runs: Store) -> None:
    two_runs.close()
    rows = eval_json(cli, "m/a", "-m", "of1", "-m", "cp", "--threshold", "0,0.5")
    got = {(r["metric"], r["params"]["threshold"]): r for r in rows}
    assert set(got) == {("of1", 0.0), ("of1", 0.5), ("cp", 0.0), ("cp", 0.5)}
    assert got[("of1", 0.0)]["value"] != got[("of1", 0.5)]["value"]
    assert got[("of1", 0.0)]["n_lists"] == 0 and got[("cp", 0.0)]["n_lists"] == 5
    default = eval_json(cli, "m/a", "-m", "of1")
    assert [r["params"]["threshold"] for r in default] == [0.5]
    assert default[0]["value"] == got[("of1", 0.5)]["value"]  # the cached value, the same
    negative = eval_json(cli, "m/a", "-m", "op", "--threshold=-1")
    assert negative[0]["params"]["threshold"] == -1.0


def test_a_negative_threshold_stays_refused_for_mma() -> None:
    """mma's threshold is a distance (>= 0); the multi-label metrics' is a score."""
    with pytest.raises(InvalidInput, match="needs finite values >= 0"):
        sweep_values(METRICS["mma"], {"threshold": [-1.0]})
    assert sweep_values(METRICS["of1"], {"threshold": [0.0, -1.0]}) == [-1.0, 0.0]
    with pytest.raises(InvalidInput, match="needs finite values, got"):
        sweep_values(METRICS["of1"], {"threshold": [float("nan")]})


def test_top_k_defaults_to_3_and_takes_k(cli: Any, two_runs: Store) -> None:
    two_runs.close()
    rows = eval_json(cli, "m/a", "-m", "of1_at_k", "-m", "cp_at_k")
    assert {r["params"]["k"] for r in rows} == {3}
    two = eval_json(cli, "m/a", "-m", "of1_at_k", "--k", "2")
    assert two[0]["params"]["k"] == 2
    five = eval_json(cli, "m/a", "-m", "of1_at_k", "--k", "5")  # every class: the threshold form
    plain = eval_json(cli, "m/a", "-m", "of1")
    assert five[0]["value"] == pytest.approx(plain[0]["value"], rel=1e-12)


def test_a_run_of_another_task_is_refused_in_one_line(cli: Any, db: Path, two_runs: Store) -> None:
    two_runs.close()
    before = snapshot(db)
    result = cli("eval", "m/ret", "-m", "of1")
    assert result.exit_code == 1
    assert "none of the requested metrics applies" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert snapshot(db) == before


def test_per_class_rows(two_runs: Store) -> None:
    frame = evaluate(two_runs, ["m/a"], metrics=["cr", "of1"], by=["class"])
    by = {(r["metric"], r["slice"]): r["value"] for r in frame.to_dicts()}
    classes = [f"class={c}" for c in ("class0", "class1", "class2", "class3", "class4")]
    assert all(("cr", c) in by for c in classes)
    mean = sum(by[("cr", c)] for c in classes) / 5
    assert by[("cr", "")] == pytest.approx(mean, rel=1e-12)  # CR is the mean of the recalls
    assert not any(m == "of1" and s for m, s in by)  # OF1 has the run's value only


def test_compare_and_leaderboard_of_run_row_values(cli: Any, two_runs: Store) -> None:
    board = leaderboard(two_runs, runs=True, protocol="mlgcn")  # ML-GCN's table, whole
    assert board.columns[:4] == ["classification map", "classification cp@0",
                                 "classification cr@0", "classification cf1@0"]  # fmt: skip
    assert len(board.columns) == 13 and "classification of1_at_k@0 (k=3)" in board.columns
    voc = leaderboard(two_runs, runs=True, protocol="voc07")  # its headline alone
    assert voc.columns == ["classification map_voc07"]
    table = leaderboard(two_runs, runs=True, protocol="mlgcn", metrics=["map", *NAMES])
    assert table.columns[:3] == ["classification map", "classification cp@0",
                                 "classification cr@0"]  # fmt: skip
    assert "classification cf1_at_k@0 (k=3)" in table.columns and len(table.columns) == 13
    assert table.wide().height == 2
    two_runs.close()
    result = cli("compare", "m/a", "m/b", "-m", "of1", "--format", "json")
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.stdout)
    # the two runs label the images differently (seeds 1 and 2): no pairing of their images
    # (tests/test_compare_samples.py tests runs of one ground truth over images)
    assert row["metric"] == "of1" and row["p_value"] is None
    assert row["diff"] == pytest.approx(row["value"] - row["baseline_value"], rel=1e-12)
    assert "truth" in row["resampled"] and "no paired test" in row["resampled"]
