"""Values logged from outside (evalstore log, Store.log_metric): validation, the table of
their own, and where they are shown (metrics, history, leaderboard, compare, check, the
overview dashboard), removal with their run and the upgrade of an older store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ranked, snapshot

from evalstore import InvalidInput, RunNotFound, Store
from evalstore import dashboards as dash
from evalstore.analysis.compare import compare, history
from evalstore.analysis.evaluate import evaluate, stored_metrics
from evalstore.analysis.gate import check
from evalstore.analysis.leaderboard import leaderboard
from evalstore.runs.logged import NO_TEST, higher_is_better


@pytest.fixture
def filled(db: Path) -> Path:
    with Store(db) as store:
        for k in range(2):
            store.ingest(ranked(seed=k), task="retrieval", run=f"exp/r{k}", git_commit=None)
        evaluate(store, None, all_runs=True, metrics=["ap"])
        for step, loss in enumerate([0.9, 0.5, 0.3]):
            store.log_metric("exp/r0", "train_loss", loss, step=step)
        store.log_metric("exp/r1", "train_loss", 0.4, step=10)
        store.log_metric("exp/r0", "val_acc", 0.8)
        store.log_metric("exp/r1", "val_acc", 0.7)
    return db


def test_log_metric_records_and_replaces(db: Path) -> None:
    with Store(db) as store:
        store.ingest(ranked(), task="retrieval", run="exp/a", git_commit=None)
        first = store.log_metric("exp/a", "train_loss", 0.5, step=3)
        assert first == {"run": "exp/a", "run_id": 1, "metric": "train_loss", "step": 3,
                         "value": 0.5, "replaced": None}  # fmt: skip
        again = store.log_metric("a", "train_loss", 0.25, step=3)
        assert again["replaced"] == 0.5 and again["value"] == 0.25
        store.log_metric("exp/a", "acc", 1)  # an int is a number; no step
        assert store.log_metric("exp/a", "acc", 0.5)["replaced"] == 1.0
        rows = store.con.sql(
            "select metric, step, value from logged_values order by metric"
        ).fetchall()
        assert rows == [("acc", None, 0.5), ("train_loss", 3, 0.25)]
        # computed values never see them
        assert store.con.sql("select count(*) from metric_values").fetchall() == [(0,)]


@pytest.mark.slow_after(4)  # a family of 14 cases: the fast loop runs the first 4
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("exp/a", "map", 0.5, None), "'map' is the mean of the computed metric ap"),
        (("exp/a", "mAP", 0.5, None), "mixed up"),
        (("exp/a", "ap_voc07", 0.5, None), "'ap_voc07' is a computed metric"),
        (("exp/a", "train/loss", 0.5, None), "not a plain identifier"),
        (("exp/a", "1loss", 0.5, None), "not a plain identifier"),
        (("exp/a", "loss", float("nan"), None), "not a finite number"),
        (("exp/a", "loss", float("inf"), None), "not a finite number"),
        (("exp/a", "loss", "0.5", None), "not a number"),
        (("exp/a", "loss", True, None), "not a number"),
        (("exp/a", "loss", 0.5, -1), "step -1 of loss is not an integer >= 0"),
        (("exp/a", "loss", 0.5, 1.5), "not an integer"),
        (("exp/a", "Val_Acc", 0.5, None), "differs only in case from the logged metric 'val_acc'"),
        (("exp/a", "val_acc", 0.5, 2), "logged val_acc without a step"),
        (("exp/a", "steps", 0.5, None), r"logs steps with steps \(0\.\.0\); give a step"),
    ],
)
def test_invalid_values_are_refused_whole(db: Path, args: tuple[Any, ...], message: str) -> None:
    with Store(db) as store:
        store.ingest(ranked(), task="retrieval", run="exp/a", git_commit=None)
        store.log_metric("exp/a", "val_acc", 0.9)
        store.log_metric("exp/a", "steps", 0.9, step=0)
    before = snapshot(db)
    with Store(db) as store, pytest.raises(InvalidInput, match=message) as err:
        store.log_metric(*args[:3], step=args[3])
    assert "\n" not in str(err.value)
    assert snapshot(db) == before


def test_unknown_run_has_a_did_you_mean(db: Path) -> None:
    with Store(db) as store:
        store.ingest(ranked(), task="retrieval", run="exp/alpha", git_commit=None)
        with pytest.raises(RunNotFound, match="did you mean 'exp/alpha'"):
            store.log_metric("exp/alpah", "loss", 0.5)


@pytest.mark.no_store
def test_cli_log_one_line_and_errors(cli: Any, db: Path) -> None:
    missing = cli("log", "exp/a", "loss", "0.5")
    assert missing.exit_code == 1 and "no evalstore database" in missing.stderr
    assert not db.exists()  # no store is made for it
    with Store(db) as store:
        store.ingest(ranked(), task="retrieval", run="exp/a", git_commit=None)
    done = cli("log", "exp/a", "train_loss", "-0.5", "--step", "2")
    assert done.exit_code == 0, done.output
    assert done.stdout == "logged train_loss = -0.5 at step 2 for run exp/a (id 1)\n"
    again = cli("log", "exp/a", "train_loss", "0.25", "--step", "2")
    assert again.stdout.strip().endswith("(replaced -0.5)")
    before = snapshot(db)
    for args, said in [
        (("exp/a", "loss", "abc"), "value 'abc' of loss is not a number"),
        (("exp/a", "loss", "nan"), "not a finite number"),
        (("exp/a", "map", "0.5"), "mixed up"),
        (("exp/a", "train_loss", "0.5"), "give a step"),
        (("exp/b", "loss", "0.5"), "no run 'exp/b'"),
    ]:
        bad = cli("log", *args)
        assert bad.exit_code == 1, args
        assert (
            bad.stderr.count("\n") == 1 and bad.stderr.startswith("Error: ") and said in bad.stderr
        )
    assert snapshot(db) == before


def test_metrics_show_logged_rows(cli: Any, filled: Path) -> None:
    with Store(filled, read_only=True) as store:
        frame = stored_metrics(store, None, all_runs=True)
        logged = frame.filter(frame["task"] == "logged")
        assert logged.select("run", "metric", "value", "params").rows() == [
            ("exp/r0", "train_loss", 0.3, '{"step":2}'),
            ("exp/r0", "val_acc", 0.8, "{}"),
            ("exp/r1", "train_loss", 0.4, '{"step":10}'),
            ("exp/r1", "val_acc", 0.7, "{}"),
        ]
        assert logged["n_lists"].null_count() == 4 and not logged["stale"].any()
        only = stored_metrics(store, ["exp/r1"], metrics=["train_loss"])
        assert only.select("metric", "value").rows() == [("train_loss", 0.4)]
        computed = stored_metrics(store, None, all_runs=True, metrics=["map"])
        assert set(computed["task"]) == {"retrieval"}
    table = cli("metrics", "--all")
    assert (
        table.exit_code == 0 and "task logged: values logged with `evalstore log`" in table.stdout
    )
    rows = json.loads(cli("metrics", "exp/r0", "-m", "train_loss", "-f", "json").stdout)
    assert [(r["task"], r["params"], r["engine"]) for r in rows] == [
        ("logged", {"step": 2}, "logged")
    ]


def test_history_of_a_logged_metric(cli: Any, filled: Path) -> None:
    with Store(filled) as store:
        frame = history(store, "train_loss")
        assert frame.select("run", "value", "params", "best_so_far").rows() == [
            ("exp/r0", 0.3, '{"step":2}', 0.3),
            ("exp/r1", 0.4, '{"step":10}', 0.3),  # lower is better for a loss
        ]
        with pytest.raises(InvalidInput, match="no run of other has logged values"):
            history(store, "train_loss", experiment="other")
        with pytest.raises(InvalidInput, match="no --protocol"):
            history(store, "train_loss", protocol="voc07")
    result = cli("history", "-m", "val_acc", "-f", "csv")
    assert (
        result.exit_code == 0 and "exp/r1" in result.stdout and ",logged,val_acc," in result.stdout
    )


def test_leaderboard_adds_logged_columns(cli: Any, filled: Path) -> None:
    with Store(filled) as store:
        board = leaderboard(store, runs=True, logged=["train_loss", "val_acc"])
        assert board.columns == ["retrieval map", "logged train_loss", "logged val_acc"]
        assert board.higher["logged train_loss"] is False and board.higher["logged val_acc"]
        wide = board.wide()
        assert wide.select("group", "logged train_loss").sort("group").rows() == [
            ("exp/r0", 0.3), ("exp/r1", 0.4)
        ]  # fmt: skip
        with pytest.raises(InvalidInput, match="no run has logged values of 'nope'"):
            leaderboard(store, logged=["nope"])
    result = cli("leaderboard", "--runs", "-m", "val_acc", "-f", "csv")
    assert result.exit_code == 0 and "logged val_acc" in result.stdout.splitlines()[0]


def test_compare_and_check_show_logged_values_without_a_test(cli: Any, filled: Path) -> None:
    with Store(filled) as store:
        frame = compare(store, ["exp/r0", "exp/r1"], metrics=["train_loss", "map"])
        row = frame.filter(frame["task"] == "logged").to_dicts()[0]
        assert row["baseline_value"] == 0.3 and row["value"] == 0.4
        assert row["diff"] == pytest.approx(0.1)
        assert row["p_value"] is None and row["ci_low"] is None and row["n_lists"] is None
        assert row["resampled"] == NO_TEST and row["higher_is_better"] is False
        assert frame.filter(frame["task"] == "retrieval")["p_adj"].null_count() == 0
        only = compare(store, ["exp/r0", "exp/r1"], metrics=["val_acc"])
        assert only.height == 1 and only["task"][0] == "logged"
        regressed, lines, _ = check(store, "exp/r1", "exp/r0", metrics=["train_loss", "map"])
        assert not regressed
        assert any(line.startswith("untested logged train_loss: 0.3 -> 0.4") for line in lines)
        assert lines[-1].startswith("1 comparison ")
        with pytest.raises(InvalidInput, match="check cannot test logged values"):
            check(store, "exp/r1", "exp/r0", metrics=["train_loss"])
    shown = cli("compare", "exp/r0", "exp/r1", "-m", "val_acc")
    assert shown.exit_code == 0 and "no per-list statistics" in shown.stdout
    gate = cli("check", "exp/r1", "--baseline", "exp/r0", "-m", "val_acc")
    assert gate.exit_code == 1 and gate.stderr.startswith("Error: check cannot test")


def test_removing_a_run_removes_its_logged_values(cli: Any, filled: Path) -> None:
    assert cli("rm", "exp/r0", "--yes").exit_code == 0
    with Store(filled) as store:
        rows = store.con.sql("select distinct run_id from logged_values").fetchall()
        assert rows == [(store.resolve("exp/r1"),)]
        store.remove("exp/r1")
        assert store.con.sql("select count(*) from logged_values").fetchall() == [(0,)]


def test_replacing_a_run_drops_the_old_runs_logged_values(filled: Path) -> None:
    with Store(filled) as store:
        store.ingest(ranked(seed=5), task="retrieval", run="exp/r0", replace=True, git_commit=None)
        left = store.con.sql("select count(*) from v_logged where run = 'exp/r0'").fetchall()
        orphans = store.con.sql(
            "select count(*) from logged_values where run_id not in (select run_id from runs)"
        ).fetchall()
    assert left == [(0,)] and orphans == [(0,)]


@pytest.mark.no_store
def test_an_older_store_upgrades(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evalstore.db import schema

    files = schema.migrations()
    older = [f for f in files if f[0] < 14]  # before 014_logged_values.sql
    monkeypatch.setattr(schema, "migrations", lambda: older)
    with Store(db) as store:
        store.ingest(ranked(), task="retrieval", run="exp/a", git_commit=None)
        tables = {t for (t,) in store.con.sql("select table_name from duckdb_tables()").fetchall()}
        assert "logged_values" not in tables
    monkeypatch.setattr(schema, "migrations", lambda: files)
    with Store(db) as store:
        assert store.schema_version() == max(v for v, _, _ in files)
        store.log_metric("exp/a", "train_loss", 0.5, step=0)
        assert store.con.sql("select run, step, value from v_logged").fetchall() == [
            ("exp/a", 0, 0.5)
        ]


def test_direction_from_the_name() -> None:
    assert not higher_is_better("val_loss") and not higher_is_better("top1_err")
    assert not higher_is_better("eval_PPL") and higher_is_better("accuracy")
    assert higher_is_better("lossless_ratio")  # a part of the name, not a substring


def test_overview_dashboard_lists_logged_values(filled: Path, tmp_path: Path) -> None:
    with Store(filled, read_only=True) as store:
        pages = {p.stem: p.read_text() for p in dash.write_dashboards(store, tmp_path / "out")}
    assert "train_loss 0.3 (step 2), val_acc 0.8" in pages["overview"]
    assert "train_loss 0.4 (step 10), val_acc 0.7" in pages["overview"]
