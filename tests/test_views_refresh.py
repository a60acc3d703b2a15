"""An ingest rebuilds the runs views only when the new run can change them (a parameter name
with a JSON type no other run gives it): v_runs then reads, for every run, what a full
refresh gives, whichever runs were added with or without a rebuild."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import ranked

from evalstore import Store
from evalstore.db import queries


@pytest.fixture
def parquet(tmp_path: Path) -> Path:
    path = tmp_path / "s.parquet"
    pl.DataFrame(ranked()).write_parquet(path)
    return path


def runs_view(store: Store) -> tuple[list[tuple[str, str]], list[tuple[Any, ...]]]:
    """v_runs' parameter columns (name, type) and its rows, by run."""
    columns = [
        (name, kind)
        for name, kind in store.con.execute(
            "select column_name, data_type from duckdb_columns() where table_name = 'v_runs' "
            "and starts_with(column_name, 'param_') order by column_name"
        ).fetchall()
    ]
    names = ", ".join(queries.quote_name(name) for name, _ in columns)
    rows = store.con.execute(f"select run, {names or 'null'} from v_runs order by run").fetchall()
    return columns, rows


def test_views_after_each_ingest_are_a_full_refresh(tmp_path: Path, parquet: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    added: list[tuple[str, dict[str, Any]]] = [
        ("a", {"lr": 0.1, "opt": "sgd"}),
        ("b", {"lr": 0.2, "opt": "adam"}),  # the same names and types: no rebuild
        ("c", {}),  # no parameters: no rebuild
        ("d", {"lr": "high"}),  # lr becomes text
        ("e", {"lr": 3, "flag": True}),  # a new name
        ("f", {"flag": None}),
    ]
    seen = []
    for name, params in added:
        store.ingest(parquet, task="retrieval", run=name, params=params, git_commit=None)
        incremental = runs_view(store)
        store.refresh_views()
        assert runs_view(store) == incremental, name
        seen.append(incremental)
    columns, rows = seen[1]
    assert columns == [("param_lr", "DOUBLE"), ("param_opt", "VARCHAR")]
    assert rows == [("default/a", 0.1, "sgd"), ("default/b", 0.2, "adam")]
    columns, rows = seen[3]
    assert columns == [("param_lr", "VARCHAR"), ("param_opt", "VARCHAR")]
    assert rows[-1] == ("default/d", "high", None)
    columns, rows = seen[5]
    assert columns == [("param_flag", "BOOLEAN"), ("param_lr", "VARCHAR"), ("param_opt", "VARCHAR")]
    assert rows[2] == ("default/c", None, None, None)
    assert rows[4] == ("default/e", True, "3", None)


def test_step_runs_keep_the_views(tmp_path: Path, parquet: Path) -> None:
    """A step run has its run's parameters: its ingest does not rebuild v_runs, whose rows
    still hold it, with the parameters."""
    store = Store(tmp_path / "s.duckdb")
    store.ingest(parquet, task="retrieval", run="exp/r", params={"lr": 0.5}, git_commit=None)
    before = store.con.execute(
        "select sql from duckdb_views() where view_name = 'v_runs'"
    ).fetchall()
    for step in (0, 10):
        store.log_lists("exp/r", parquet, task="retrieval", step=step)
    incremental = runs_view(store)
    assert (
        store.con.execute("select sql from duckdb_views() where view_name = 'v_runs'").fetchall()
        == before
    )
    store.refresh_views()
    assert runs_view(store) == incremental
    assert incremental[1] == [("exp/r", 0.5), ("exp/r@0", 0.5), ("exp/r@10", 0.5)]
