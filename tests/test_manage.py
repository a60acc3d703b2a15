"""Managing runs after ingest: rm of several runs or an experiment, mv, set, and the runs
filters --where (in the sandbox) and --commit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ranked, snapshot

from evalstore import Store
from evalstore.analysis.evaluate import evaluate


@pytest.fixture
def filled(db: Path) -> Path:
    with Store(db) as store:
        for k, (exp, lr, commit) in enumerate(
            [("a", 0.1, "1111aaaa"), ("a", 0.001, "2222bbbb"), ("b", 0.05, "1111cccc")]
        ):
            store.ingest(
                ranked(seed=k),
                task="retrieval",
                run=f"{exp}/r{k}",
                params={"lr": lr},
                git_commit=commit,
                notes="first",
            )
        evaluate(store, None, all_runs=True, metrics=["ap"])
    return db


def names(cli: Any, *args: str) -> list[str]:
    result = cli("runs", "--format", "json", *args)
    assert result.exit_code == 0, result.output
    return sorted(f"{r['experiment']}/{r['name']}" for r in json.loads(result.stdout))


def test_rm_several_runs_or_an_experiment(cli: Any, filled: Path) -> None:
    before = snapshot(filled)
    bad = cli("rm", "a/r0", "nope", "--yes")
    assert bad.exit_code == 1 and "nope" in bad.stderr and snapshot(filled) == before
    done = cli("rm", "a/r0", "b/r2", "--yes")
    assert done.exit_code == 0, done.output
    assert done.stdout.count("deleted run") == 2
    assert names(cli) == ["a/r1"]
    assert cli("rm", "--experiment", "a", "--yes").exit_code == 0
    assert names(cli) == []
    with Store(filled) as store:
        for table in ("groups", "list_stats", "metric_values", "list_values"):
            assert store.con.sql(f"select count(*) from {table}").fetchall() == [(0,)], table
    none = cli("rm", "--experiment", "a", "--yes")
    assert none.exit_code == 1 and "no runs in experiment 'a'" in none.stderr


def test_mv_renames_and_moves_keeping_id_rows_and_metrics(cli: Any, filled: Path) -> None:
    with Store(filled) as store:
        rid = store.resolve("a/r0")
        values = store.con.sql(f"select * from metric_values where run_id = {rid}").fetchall()
    assert cli("mv", "a/r0", "renamed").exit_code == 0
    moved = cli("mv", "a/renamed", "c/moved")
    assert moved.exit_code == 0 and "to c/moved (id" in moved.stdout
    assert names(cli) == ["a/r1", "b/r2", "c/moved"]
    with Store(filled) as store:
        assert store.resolve("c/moved") == rid
        got = store.con.sql(f"select * from metric_values where run_id = {rid}").fetchall()
        assert got == values
        metrics = store.con.sql("select run from v_metrics where run_id = " + str(rid)).fetchall()
        assert {m for (m,) in metrics} == {"c/moved"}
    before = snapshot(filled)
    taken = cli("mv", "c/moved", "a/r1")
    assert taken.exit_code == 1 and "run a/r1 exists" in taken.stderr
    assert snapshot(filled) == before


def test_set_edits_notes_and_params(cli: Any, filled: Path) -> None:
    done = cli("set", "a/r0", "--notes", "better", "-p", "lr=0.5", "-p", "opt=adam")
    assert done.exit_code == 0, done.output
    with Store(filled, read_only=True) as store:
        info = store.run("a/r0")
        assert info["notes"] == "better" and info["params"] == {"lr": 0.5, "opt": "adam"}
        typed = store.con.sql("select param_lr, param_opt from v_runs where name = 'r0'")
        assert typed.fetchall() == [(0.5, "adam")]
    assert cli("set", "a/r0", "--unset", "opt", "--notes", "").exit_code == 0
    with Store(filled, read_only=True) as store:
        info = store.run("a/r0")
        assert info["params"] == {"lr": 0.5} and info["notes"] is None
    before = snapshot(filled)
    for args, message in [
        (("--unset", "nope"), "has no param 'nope'"),
        (("-p", "LR=1"), "LR"),
    ]:
        bad = cli("set", "a/r0", *args)
        assert bad.exit_code == 1 and message in bad.stderr, bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1
    assert snapshot(filled) == before


def test_runs_where_and_commit(cli: Any, filled: Path) -> None:
    assert names(cli, "--where", "param_lr > 0.01") == ["a/r0", "b/r2"]
    assert names(cli, "--where", "param_lr > 0.01 and experiment = 'a'") == ["a/r0"]
    assert names(cli, "--commit", "1111") == ["a/r0", "b/r2"]
    assert names(cli, "--commit", "2222bbbb", "--where", "true") == ["a/r1"]
    table = cli("runs", "--where", "name = 'r1'")
    assert table.exit_code == 0 and "r1" in table.stdout and "r0" not in table.stdout
    before = snapshot(filled)
    for predicate, message in [
        ("true; delete from runs", "syntax error"),
        ("true); delete from runs; select (1", "one statement at a time"),
        ("true) union (select 1 from read_csv('/etc/passwd')", "may not read '/etc/passwd'"),
        ("no_such_column > 1", "SQL error"),
    ]:
        bad = cli("runs", "--where", predicate)
        assert bad.exit_code == 1, predicate
        lines = bad.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0] and "--where" in lines[0], bad.stderr
    assert snapshot(filled) == before


def test_metrics_by_mean_name_in_any_case_and_did_you_mean(cli: Any, filled: Path) -> None:
    for name in ("map", "mAP", "ap", "MAP"):
        got = cli("metrics", "a/r0", "-m", name, "--format", "json")
        assert got.exit_code == 0, got.output
        rows = json.loads(got.stdout)
        assert rows and {r["metric"] for r in rows} == {"map"}, name
    bad = cli("metrics", "a/r0", "-m", "mapp")
    assert bad.exit_code == 1 and "did you mean 'map'" in bad.stderr
    typo = cli("show", "a/r00")
    assert typo.exit_code == 1 and "did you mean 'a/r0'" in typo.stderr, typo.stderr


def test_tsv_and_nl_formats(cli: Any, filled: Path) -> None:
    tsv = cli("sql", "select 1 as a, 'x y' as b", "--format", "tsv")
    assert tsv.exit_code == 0 and tsv.stdout.splitlines() == ["a\tb", "1\tx y"]
    nl = cli("runs", "--format", "nl", "--sort", "id")
    assert nl.exit_code == 0, nl.output
    rows = [json.loads(line) for line in nl.stdout.splitlines()]
    assert [r["name"] for r in rows] == ["r0", "r1", "r2"] and rows[0]["params"] == {"lr": 0.1}
    metrics = cli("metrics", "--all", "--format", "nl")
    assert metrics.exit_code == 0
    assert {json.loads(line)["metric"] for line in metrics.stdout.splitlines()} == {"map"}
    tex = cli("sql", "select 1 as a", "--format", "latex", "-o", str(filled.parent / "t.tex"))
    assert tex.exit_code == 0 and "\\begin{tabular}" in (filled.parent / "t.tex").read_text()


def test_eval_by_an_unknown_key_is_an_error(cli: Any, filled: Path) -> None:
    bad = cli("eval", "a/r0", "--by", "qeury")
    assert bad.exit_code == 1 and "did you mean 'query'" in bad.stderr, bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    good = cli("eval", "a/r0", "--by", "query", "--format", "json")
    assert good.exit_code == 0 and any(r["slice"] for r in json.loads(good.stdout))


def test_store_sql_runs_one_read_only_query(filled: Path) -> None:
    import polars as pl

    from evalstore import InvalidInput

    with Store(filled) as store:  # writable: checked, rolled back
        got = store.sql("select name from v_runs where param_lr > $lr order by name", {"lr": 0.01})
        assert got.equals(pl.DataFrame({"name": ["r0", "r2"]}))
        with pytest.raises(InvalidInput, match="only a read-only query"):
            store.sql("delete from runs")
        assert store.runs().height == 3
    with Store(filled, read_only=True) as store:  # read-only: the sandbox
        assert store.sql("select count(*) as n from runs")["n"].to_list() == [3]
        with pytest.raises(InvalidInput, match="may not read"):
            store.sql("select * from read_csv('/etc/passwd')")


@pytest.mark.slow
def test_the_demo_keeps_to_its_own_store(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "EVALSTORE_DB": str(tmp_path / "mine.duckdb")}
    done = subprocess.run(
        [sys.executable, "-m", "evalstore", "demo", "--quick"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "evalstore-demo.duckdb").exists() and not (tmp_path / "mine.duckdb").exists()
    hints = [line for line in done.stderr.splitlines() if line.startswith("  evalstore ")]
    assert hints and all("--db evalstore-demo.duckdb" in line for line in hints)


def test_a_misspelt_task_gets_a_did_you_mean(cli: Any, tmp_path: Path) -> None:
    csv = tmp_path / "s.csv"
    csv.write_text("group_id,item_id,score,label\nq,a,1,1\n")
    bad = cli("ingest", str(csv), "--task", "retreival", "--run", "x/y")
    assert bad.exit_code == 1 and "did you mean 'retrieval'?" in bad.stderr, bad.stderr
