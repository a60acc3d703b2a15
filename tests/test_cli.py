from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import ranked, snapshot


@pytest.fixture
def three_runs(cli: Any, tmp_path: Path) -> Any:
    path = tmp_path / "s.parquet"
    pl.DataFrame(ranked()).write_parquet(path)
    for run, when, tags in [
        ("exp-a/first", "2026-01-01T00:00", ["baseline"]),
        ("exp-a/second", "2026-01-08T00:00", ["best", "baseline"]),
        ("exp-b/first", "2026-01-15T00:00", []),
    ]:
        args = [
            "ingest",
            str(path),
            "--task",
            "retrieval",
            "--run",
            run,
            "--created-at",
            when,
            "-p",
            "lr=0.01",
        ]
        for t in tags:
            args += ["--tag", t]
        assert cli(*args).exit_code == 0
    return cli


def runs_json(cli: Any, *args: str) -> list[dict[str, Any]]:
    result = cli("runs", "--format", "json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_runs_filters_sorts_and_limits(three_runs: Any) -> None:
    names = lambda rows: [f"{r['experiment']}/{r['name']}" for r in rows]  # noqa: E731
    assert names(runs_json(three_runs)) == ["exp-b/first", "exp-a/second", "exp-a/first"]
    assert names(runs_json(three_runs, "--experiment", "exp-a")) == ["exp-a/second", "exp-a/first"]
    assert names(runs_json(three_runs, "--tag", "best")) == ["exp-a/second"]
    assert names(runs_json(three_runs, "--sort", "name")) == [
        "exp-a/first",
        "exp-a/second",
        "exp-b/first",
    ]
    assert names(runs_json(three_runs, "--limit", "1")) == ["exp-b/first"]
    assert runs_json(three_runs)[0]["params"] == {"lr": 0.01}


@pytest.mark.parametrize("fmt", ["table", "csv", "md"])
def test_runs_text_formats(three_runs: Any, fmt: str) -> None:
    result = three_runs("runs", "--format", fmt)
    assert result.exit_code == 0
    assert "exp-a" in result.stdout and "second" in result.stdout


def test_show_by_name_path_and_id(three_runs: Any) -> None:
    by_path = json.loads(three_runs("show", "exp-a/second", "--format", "json").stdout)
    by_id = json.loads(three_runs("show", str(by_path["run_id"]), "--format", "json").stdout)
    by_name = json.loads(three_runs("show", "second", "--format", "json").stdout)
    assert by_path == by_id == by_name
    assert by_path["tasks"] == [{"task": "retrieval", "rows": 15, "lists": 3}]
    table = three_runs("show", "exp-a/second")
    assert "param lr" in table.stdout and "0.01" in table.stdout


def test_ambiguous_and_unknown_runs(three_runs: Any) -> None:
    result = three_runs("show", "first")
    assert result.exit_code == 1
    assert "Error: run 'first' is ambiguous: exp-a/first, exp-b/first" in result.stderr
    result = three_runs("show", "nope")
    assert result.exit_code == 1 and "Error: no run 'nope'" in result.stderr


def test_tag_and_untag(three_runs: Any) -> None:
    assert three_runs("tag", "exp-b/first", "new", "good").stdout.strip() == "tags: new, good"
    assert three_runs("tag", "exp-b/first", "new", "--remove").stdout.strip() == "tags: good"
    assert [r["name"] for r in runs_json(three_runs, "--tag", "good")] == ["first"]
    result = three_runs("tag", "exp-b/first", "absent", "--remove")
    assert result.exit_code == 1 and "has no tag 'absent'" in result.stderr


def test_rm_asks_and_yes_deletes(three_runs: Any, db: Path) -> None:
    before = snapshot(db)
    result = three_runs("rm", "exp-b/first", input="n\n")
    assert result.exit_code == 1
    assert snapshot(db) == before
    result = three_runs("rm", "exp-b/first", "--yes")
    assert result.exit_code == 0 and "deleted run exp-b/first" in result.stdout
    assert len(runs_json(three_runs)) == 2
    assert len(snapshot(db)["scores"]) == 30


def test_usage_errors_exit_2(cli: Any) -> None:
    assert cli("ingest").exit_code == 2
    assert cli("runs", "--limit", "many").exit_code == 2


@pytest.mark.slow  # a real process
def test_python_dash_m(db: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "evalstore", "--help"], capture_output=True, text=True
    )
    assert proc.returncode == 0 and "ingest" in proc.stdout
