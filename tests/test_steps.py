"""Evaluations at training steps: Store.log_lists (and the other tasks' forms) store a step's
rows as the step run NAME@STEP; every metric applies per step, a run's value is its last
step's, eval --step / --by step and history --by step show a metric over training."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from sklearn.metrics import average_precision_score

from evalstore import Store
from evalstore.analysis.evaluate import evaluate
from evalstore.errors import InvalidInput, RunExists, RunNotFound


def lists(seed: int, n_groups: int = 6, n_items: int = 20) -> dict[str, np.ndarray]:
    """Ranked lists, labels +1/-1 with at least one positive per list, distinct scores."""
    rng = np.random.default_rng(seed)
    label = np.where(rng.random(n_groups * n_items) < 0.3, 1, -1)
    label[::n_items] = 1
    return {
        "group_id": np.repeat(np.arange(n_groups), n_items),
        "item_id": np.tile(np.arange(n_items), n_groups),
        "score": rng.permutation(n_groups * n_items).astype(np.float64) / 7,
        "label": label,
    }


def mean_ap(data: dict[str, np.ndarray]) -> float:
    """scikit-learn's average precision of each list, averaged over the lists."""
    frame = pl.DataFrame(data)
    aps = [
        average_precision_score(g["label"].to_numpy() == 1, g["score"].to_numpy())
        for _, g in frame.group_by("group_id", maintain_order=True)
    ]
    return float(np.mean(aps))


def value(frame: pl.DataFrame, **where: Any) -> float:
    rows = frame.filter(pl.col("slice") == "")
    for key, wanted in where.items():
        rows = rows.filter(pl.col(key) == wanted)
    assert rows.height == 1, rows
    return float(rows["value"][0])


@pytest.fixture
def stepped(store: Store) -> Store:
    """exp/a with retrieval steps 0, 10, 20 (rows of seeds 0, 1, 2), exp/b with 0, 10
    (seeds 10, 11); both made by an ingest first (rows of seed 99)."""
    for name in ("a", "b"):
        store.ingest(lists(99), task="retrieval", run=f"exp/{name}", git_commit=None,
                     params={"lr": 0.1}, tags=["t"])  # fmt: skip
    for i, step in enumerate((0, 10, 20)):
        store.log_lists("exp/a", lists(i), task="retrieval", step=step)
    for i, step in enumerate((0, 10)):
        store.log_lists("exp/b", lists(10 + i), task="retrieval", step=step)
    return store


def test_each_step_is_a_run_named_at_its_step_with_the_parents_metadata(stepped: Store) -> None:
    links = stepped.sql("select run, step, step_run from v_steps order by run, step")
    assert links.rows() == [
        ("exp/a", 0, "exp/a@0"), ("exp/a", 10, "exp/a@10"), ("exp/a", 20, "exp/a@20"),
        ("exp/b", 0, "exp/b@0"), ("exp/b", 10, "exp/b@10"),
    ]  # fmt: skip
    sub = stepped.run("exp/a@10")
    assert (sub["params"], list(sub["tags"]), sub["git_commit"]) == ({"lr": 0.1}, ["t"], None)


@pytest.mark.parametrize("task", ["retrieval", "classification"])
def test_the_value_at_each_step_is_the_metric_of_that_steps_rows(store: Store, task: str) -> None:
    store.ingest(lists(99), task=task, run="r", git_commit=None)
    for step in (0, 3, 7):
        store.log_lists("r", lists(step), task=task, step=step)
    every = evaluate(store, ["r"], metrics=["ap"], by_step=True)
    assert every.filter(pl.col("slice") == "")["step"].to_list() == [0, 3, 7]
    assert set(every["run"]) == {"default/r"}
    for step in (0, 3, 7):
        assert value(every, step=step) == pytest.approx(mean_ap(lists(step)), abs=1e-12)
        one = evaluate(store, ["r"], metrics=["ap"], step=step)
        assert value(one) == pytest.approx(mean_ap(lists(step)), abs=1e-12)
        by_name = evaluate(store, [f"r@{step}"], metrics=["ap"])  # the step run by name
        assert "step" not in by_name.columns
        assert value(by_name) == value(one)


def test_an_outcomes_step_is_valued_as_its_counts(store: Store) -> None:
    store.ingest_outcomes({"group_id": [1], "tp": [1], "fp": [0], "fn": [0]}, run="seg",
                          git_commit=None)  # fmt: skip
    counts = {0: ([3, 1], [1, 2], [0, 1]), 5: ([4, 2], [0, 1], [1, 0])}
    for step, (tp, fp, fn) in counts.items():
        frame = {"group_id": [1, 2], "tp": tp, "fp": fp, "fn": fn}
        store.log_outcomes("seg", frame, step=step)
    every = evaluate(store, ["seg"], metrics=["iou"], by_step=True)
    for step, (tp, fp, fn) in counts.items():
        expected = np.mean([t / (t + p + n) for t, p, n in zip(tp, fp, fn, strict=True)])
        assert value(every, step=step) == pytest.approx(expected, abs=1e-12)


def test_a_runs_value_is_its_last_steps_and_follows_a_new_step(stepped: Store) -> None:
    frame = evaluate(stepped, ["exp/a", "exp/b"], metrics=["ap"])
    assert value(frame, run="exp/a") == pytest.approx(mean_ap(lists(2)), abs=1e-12)
    assert value(frame, run="exp/b") == pytest.approx(mean_ap(lists(11)), abs=1e-12)
    assert frame.filter(pl.col("slice") == "")["step"].to_list() == [20, 10]
    assert frame["run_id"].to_list() == [stepped.resolve("exp/a"), stepped.resolve("exp/b")]
    # the values are mirrored under the run's own id (compare, check, groups read them there)
    mirrored = stepped.sql(
        "select value from metric_values where run_id = $id and slice = ''",
        {"id": stepped.resolve("exp/a")},
    )
    assert mirrored["value"].to_list() == [value(frame, run="exp/a")]
    stepped.log_lists("exp/a", lists(7), task="retrieval", step=30)
    gone = stepped.sql(
        "select count(*) as n from metric_values where run_id = $id",
        {"id": stepped.resolve("exp/a")},
    )
    assert gone["n"][0] == 0  # the mirror is dropped with the new step's rows
    again = evaluate(stepped, ["exp/a"], metrics=["ap"])
    assert value(again) == pytest.approx(mean_ap(lists(7)), abs=1e-12)
    assert again["step"].to_list() == [30]


def test_runs_without_steps_keep_their_columns(store: Store) -> None:
    store.ingest(lists(1), task="retrieval", run="plain", git_commit=None)
    frame = evaluate(store, ["plain"], metrics=["ap"])
    assert "step" not in frame.columns
    assert value(frame) == pytest.approx(mean_ap(lists(1)), abs=1e-12)


def test_another_task_at_a_step_joins_the_step_run(stepped: Store) -> None:
    before = stepped.resolve("exp/a@10")
    stepped.log_lists("exp/a", lists(5), task="classification", step=10)
    assert stepped.resolve("exp/a@10") == before
    tasks = {t["task"] for t in stepped.run("exp/a@10")["tasks"]}
    assert tasks == {"retrieval", "classification"}
    frame = evaluate(stepped, ["exp/a"], metrics=["ap"], step=10)
    assert value(frame, task="classification") == pytest.approx(mean_ap(lists(5)), abs=1e-12)
    assert value(frame, task="retrieval") == pytest.approx(mean_ap(lists(1)), abs=1e-12)


def test_the_same_task_at_a_step_is_refused_unless_replaced(stepped: Store, db: Path) -> None:
    before = snapshot_of(stepped, db)
    with pytest.raises(RunExists, match=r"run exp/a has retrieval rows at step 10 already"):
        stepped.log_lists("exp/a", lists(8), task="retrieval", step=10)
    assert snapshot_of(stepped, db) == before
    stepped.log_lists("exp/a", lists(8), task="retrieval", step=10, replace=True)
    frame = evaluate(stepped, ["exp/a"], metrics=["ap"], step=10)
    assert value(frame) == pytest.approx(mean_ap(lists(8)), abs=1e-12)
    steps = stepped.sql("select step from v_steps where run = 'exp/a' order by step")
    assert steps["step"].to_list() == [0, 10, 20]  # relinked, one per step


@pytest.mark.parametrize(
    ("run", "step", "error", "message"),
    [
        ("exp/none", 1, RunNotFound, "no run 'exp/none'"),
        ("exp/a", -1, InvalidInput, "step must be a whole number >= 0, got -1"),
        ("exp/a", 1.5, InvalidInput, "step must be a whole number >= 0, got 1.5"),
        ("exp/a", True, InvalidInput, "step must be a whole number >= 0, got True"),
        ("exp/a@10", 1, InvalidInput, "run exp/a@10 is the evaluation of run exp/a at step 10"),
    ],
)
def test_a_missing_parent_or_a_bad_step_is_one_line_and_writes_nothing(
    stepped: Store, db: Path, run: str, step: Any, error: type[Exception], message: str
) -> None:
    before = snapshot_of(stepped, db)
    with pytest.raises(error, match=message) as caught:
        stepped.log_lists(run, lists(3), task="retrieval", step=step)
    assert "\n" not in str(caught.value)
    assert snapshot_of(stepped, db) == before


def test_rows_that_fail_their_checks_leave_no_step_run_and_no_link(
    stepped: Store, db: Path
) -> None:
    bad = lists(3)
    bad["score"][4] = np.nan
    before = snapshot_of(stepped, db)
    with pytest.raises(InvalidInput):
        stepped.log_lists("exp/a", bad, task="retrieval", step=40)
    assert snapshot_of(stepped, db) == before


def test_a_numpy_step_is_a_step(store: Store) -> None:
    store.ingest(lists(0), task="retrieval", run="r", git_commit=None)
    store.log_lists("r", lists(1), task="retrieval", step=np.int64(4))
    assert store.sql("select step from v_steps")["step"].to_list() == [4]


def test_eval_step_that_a_run_lacks_names_its_steps(stepped: Store) -> None:
    with pytest.raises(
        InvalidInput, match=r"run exp/a has no evaluation at step 5 \(its steps: 0, 10, 20\)"
    ):
        evaluate(stepped, ["exp/a"], metrics=["ap"], step=5)


def test_compare_pairs_the_last_step_both_evaluated(stepped: Store) -> None:
    from evalstore.analysis.step_history import compare_at_step

    found = compare_at_step(stepped, ["exp/a", "exp/b"], metrics=["ap"])
    assert found is not None
    frame, at = found
    assert at == 10
    row = frame.row(0, named=True)
    assert (row["run"], row["baseline"], row["step"]) == ("exp/b", "exp/a", 10)
    assert row["baseline_value"] == pytest.approx(mean_ap(lists(1)), abs=1e-12)
    assert row["value"] == pytest.approx(mean_ap(lists(11)), abs=1e-12)
    frame, at = compare_at_step(stepped, ["exp/a", "exp/b"], metrics=["ap"], step=0) or ((), 0)
    assert at == 0
    assert frame["baseline_value"][0] == pytest.approx(mean_ap(lists(0)), abs=1e-12)
    with pytest.raises(InvalidInput, match="not every run evaluated step 20"):
        compare_at_step(stepped, ["exp/a", "exp/b"], metrics=["ap"], step=20)


# -- the command line ---------------------------------------------------------------------------


def test_cli_eval_step_and_by_step(stepped: Store, db: Path, cli: Any) -> None:
    stepped.close()
    out = cli("eval", "exp/a", "-m", "ap", "--step", "10", "--format", "json")
    assert out.exit_code == 0, out.output
    (row,) = json.loads(out.stdout)
    assert (row["run"], row["step"]) == ("exp/a", 10)
    assert row["value"] == pytest.approx(mean_ap(lists(1)), abs=1e-12)
    out = cli("eval", "exp/a", "-m", "ap", "--by", "step", "--format", "json")
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)
    assert [r["step"] for r in rows] == [0, 10, 20]
    assert [r["value"] for r in rows] == pytest.approx([mean_ap(lists(i)) for i in range(3)])
    out = cli("eval", "exp/a", "-m", "ap", "--format", "json")  # the last step's
    (row,) = json.loads(out.stdout)
    assert (row["step"], row["value"]) == (20, pytest.approx(mean_ap(lists(2)), abs=1e-12))
    out = cli("eval", "exp/a", "-m", "ap", "--step", "7")
    assert out.exit_code != 0
    assert out.output.strip().splitlines() == [
        "Error: run exp/a has no evaluation at step 7 (its steps: 0, 10, 20)"
    ]


def test_cli_history_by_step_of_a_run_and_of_an_experiment(stepped: Store, cli: Any) -> None:
    stepped.close()
    out = cli("history", "-m", "map", "--by", "step", "--run", "exp/a", "--format", "json")
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)
    expected = [mean_ap(lists(i)) for i in range(3)]
    assert [(r["run"], r["step"]) for r in rows] == [("exp/a", 0), ("exp/a", 10), ("exp/a", 20)]
    assert [r["value"] for r in rows] == pytest.approx(expected, abs=1e-12)
    assert [r["best_so_far"] for r in rows] == pytest.approx(np.maximum.accumulate(expected))
    out = cli("history", "-m", "map", "--by", "step", "-e", "exp", "--format", "json")
    assert [(r["run"], r["step"]) for r in json.loads(out.stdout)] == [
        ("exp/a", 0), ("exp/a", 10), ("exp/a", 20), ("exp/b", 0), ("exp/b", 10),
    ]  # fmt: skip


def test_cli_history_by_step_of_a_logged_value(stepped: Store, cli: Any) -> None:
    for step, loss in ((0, 2.5), (10, 1.25), (20, 1.5)):
        stepped.log_metric("exp/a", "loss", loss, step)
    stepped.close()
    out = cli("history", "-m", "loss", "--by", "step", "--run", "exp/a", "--format", "json")
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)
    assert [(r["step"], r["value"], r["best_so_far"]) for r in rows] == [
        (0, 2.5, 2.5), (10, 1.25, 1.25), (20, 1.5, 1.25),
    ]  # fmt: skip


def test_cli_compare_says_the_step(stepped: Store, cli: Any) -> None:
    stepped.close()
    out = cli("compare", "exp/a", "exp/b", "-m", "ap", "--format", "json")
    assert out.exit_code == 0, out.output
    assert "compared at step 10" in out.stderr
    (row,) = json.loads(out.stdout)
    assert (row["run"], row["baseline"], row["step"]) == ("exp/b", "exp/a", 10)


def test_cli_history_by_rejects_another_key(stepped: Store, cli: Any) -> None:
    stepped.close()
    out = cli("history", "-m", "map", "--by", "epoch")
    assert out.exit_code != 0
    assert out.output.strip().splitlines() == ["Error: --by must be time or step, got 'epoch'"]


def test_store_methods_take_the_step_functions_keywords() -> None:
    import inspect

    from evalstore.store import steps

    for name in ("log_lists", "log_keypoints", "log_outcomes", "log_detections"):
        ours = inspect.signature(getattr(Store, name)).parameters
        theirs = inspect.signature(getattr(steps, name)).parameters
        assert list(ours)[1:] == list(theirs)[1:], name
        for key in list(theirs)[2:]:
            assert ours[key].default == theirs[key].default, (name, key)


def snapshot_of(store: Store, db: Path) -> dict[str, Any]:
    """Every row of every table of the open store, sorted: equal = unchanged."""
    tables = [r[0] for r in store.con.execute(
        "select table_name from information_schema.tables where table_type = 'BASE TABLE'"
    ).fetchall()]  # fmt: skip
    return {
        t: sorted(store.con.execute(f"select * from {t}").fetchall(), key=repr)  # test-only SQL
        for t in tables
    }


def test_compare_and_check_of_runs_read_their_last_steps_rows(store: Store) -> None:
    from evalstore.analysis.compare import compare
    from evalstore.analysis.gate import check

    def scored(seed: int) -> dict[str, np.ndarray]:  # the same items and labels, new scores
        return {**lists(0), "score": lists(seed)["score"]}

    for name, seeds in (("c", (1, 2)), ("d", (3, 4))):
        store.ingest(scored(0), task="retrieval", run=f"exp/{name}", git_commit=None)
        for step, seed in enumerate(seeds):
            store.log_lists(f"exp/{name}", scored(seed), task="retrieval", step=step)
    frame = compare(store, ["exp/c", "exp/d"], metrics=["ap"], resample="items")
    row = frame.row(0, named=True)
    assert (row["run"], row["baseline"]) == ("exp/d", "exp/c")
    assert row["baseline_value"] == pytest.approx(mean_ap(scored(2)), abs=1e-12)
    assert row["value"] == pytest.approx(mean_ap(scored(4)), abs=1e-12)
    assert row["resampled"].startswith("items")  # the step runs' rows, resampled
    _, lines, checked = check(store, "exp/d", "exp/c", metrics=["ap"])
    assert checked["baseline_value"].to_list() == [row["baseline_value"]]
    assert lines


def test_eval_all_values_each_run_once_its_steps_through_it(stepped: Store) -> None:
    stepped.ingest(lists(5), task="retrieval", run="exp/plain", git_commit=None)
    frame = evaluate(stepped, None, all_runs=True, metrics=["ap"]).filter(pl.col("slice") == "")
    assert frame.select("run", "step").rows() == [("exp/a", 20), ("exp/b", 10), ("exp/plain", None)]


def test_a_removed_step_run_is_no_longer_a_step(stepped: Store) -> None:
    stepped.remove("exp/a@20")
    frame = evaluate(stepped, ["exp/a"], metrics=["ap"])
    assert frame["step"].to_list() == [10]
    assert value(frame) == pytest.approx(mean_ap(lists(1)), abs=1e-12)
    stepped.log_lists("exp/a", lists(4), task="retrieval", step=20)  # logged again
    assert evaluate(stepped, ["exp/a"], metrics=["ap"])["step"].to_list() == [20]


def test_an_interval_and_slices_of_a_run_are_its_last_steps(stepped: Store) -> None:
    mine = evaluate(stepped, ["exp/a"], metrics=["ap"], ci=True, by=["query"])
    step_run = evaluate(stepped, ["exp/a@20"], metrics=["ap"], ci=True, by=["query"])
    assert mine.height == step_run.height == 7  # the mean and one row per list
    assert set(mine["run"]) == {"exp/a"} and set(mine["step"]) == {20}
    columns = ["slice", "value", "ci_low", "ci_high"]
    assert mine.select(columns).equals(step_run.select(columns))


def test_run_methods_take_the_store_methods_keywords() -> None:
    import inspect

    from evalstore import Run

    for name in ("log_lists", "log_keypoints", "log_outcomes", "log_detections"):
        ours = inspect.signature(getattr(Run, name)).parameters
        theirs = inspect.signature(getattr(Store, name)).parameters
        assert list(ours) == [p for p in theirs if p != "run"], name
        for key in ours:
            assert ours[key].default == theirs[key].default, (name, key)


def test_a_run_opened_from_a_loop_logs_outcomes_at_steps(db: Path) -> None:
    import evalstore

    with evalstore.init("seg/unet", db=db, git_commit=None, tags=["t"]) as run:
        for step, tp in ((0, 1), (1, 3)):
            run.log_outcomes({"group_id": [1], "tp": [tp], "fp": [1], "fn": [0]}, step=step)
    with Store(db) as store:
        every = evaluate(store, ["seg/unet"], metrics=["iou"], by_step=True)
        assert every.filter(pl.col("slice") == "").select("step", "value").rows() == [
            (0, 0.5), (1, 0.75),
        ]  # fmt: skip
        assert list(store.run("seg/unet@1")["tags"]) == ["t"]
