from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest
from typer.testing import CliRunner

from evalstore import Store
from evalstore.cli import app

TABLES = ("runs", "scores", "groups")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "evalstore.duckdb"


@pytest.fixture
def store(db: Path):
    with Store(db) as s:
        yield s


@pytest.fixture
def cli(db: Path):
    """Invoke the CLI against the test database; returns the click Result."""
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None) -> Any:
        return runner.invoke(app, [*args, "--db", str(db)], input=input)

    return invoke


def snapshot(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every evalstore table, sorted: equal snapshots = unchanged database."""
    if not db.exists():
        return {}
    con = duckdb.connect(str(db), read_only=True)
    try:
        tables = {
            r[0] for r in con.execute("select table_name from information_schema.tables").fetchall()
        }
        return {
            t: sorted(con.execute(f"select * from {t}").fetchall(), key=repr)  # test-only SQL
            for t in sorted(tables)
        }
    finally:
        con.close()


def ranked(n_groups: int = 3, n_items: int = 5, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(n_groups), n_items)
    i = np.tile(np.arange(n_items), n_groups)
    return {
        "group_id": g,
        "item_id": i,
        "score": rng.standard_normal(g.size).round(3),
        "label": rng.choice([-1, 0, 1], size=g.size),
    }
