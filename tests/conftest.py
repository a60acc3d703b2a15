from __future__ import annotations

import collections
import contextlib
import functools
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest
import typer.main
import typer.testing
from hypothesis import settings
from typer.testing import CliRunner

from evalstore import Store
from evalstore.cli import app

TABLES = ("runs", "scores", "groups")

# -- the command line in process: one click command per app ------------------------------------
# Typer builds the click command of an app from its functions' signatures on every
# CliRunner.invoke (about 50 ms of CPU: typing evaluates every annotation), where a process
# builds it once; the tests invoke the same app thousands of times, so the build is kept.
assert typer.testing._get_command is typer.main.get_command, "typer moved get_command"
typer.main.get_command = typer.testing._get_command = functools.cache(typer.main.get_command)


# -- hypothesis profiles: `dev` while you work, `ci` in .ci/run, `stress` to hunt rare inputs -----
# ci keeps hypothesis' own counts (100 examples, or what a test's @settings asks for); dev draws a
# tenth, without a deadline (a loaded machine is not a slow test); stress draws ten times ci's,
# without a deadline, printing the blob of a failure (--hypothesis-profile=stress). ci is chosen by
# --hypothesis-profile=ci (what .ci/run passes), HYPOTHESIS_PROFILE=ci or CI=true.
# All three build on hypothesis' own default profile, not on what is loaded (under CI=true, its
# built-in "ci" profile, which ours replaces).
CI_EXAMPLES = 100
_DEFAULT = settings.get_profile("default")
settings.register_profile("ci", _DEFAULT, max_examples=CI_EXAMPLES, print_blob=True)
settings.register_profile("dev", _DEFAULT, max_examples=CI_EXAMPLES // 10, deadline=None)
settings.register_profile(
    "stress", _DEFAULT, max_examples=CI_EXAMPLES * 10, deadline=None, print_blob=True
)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE")
    or ("ci" if os.environ.get("CI", "").lower() in ("true", "1") else "dev")
)


def examples(n: int) -> int:
    """The example count of a test that asks for ``n`` under ci, scaled with the profile (a
    tenth, at least 2, under dev; ten times under stress):
    ``@settings(max_examples=examples(n))``, where a bare number would override the profile.
    Read when the test module is imported, after the profile is loaded (from the command line
    too)."""
    return max(min(n, 2), n * settings().max_examples // CI_EXAMPLES)


@pytest.fixture(scope="session")
def _empty_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new, empty store made once per session: building the schema costs about 0.1 s of CPU,
    copying the closed file 2 ms, and most tests begin from an empty store."""
    path = tmp_path_factory.mktemp("template") / "evalstore.duckdb"
    Store(path).close()
    return path


@pytest.fixture
def db(request: pytest.FixtureRequest, tmp_path: Path, _empty_store: Path) -> Path:
    """An empty store's path: a copy of one made for the session (its store id is shared by
    the copies, which no test holds two of). Under ``@pytest.mark.no_store``, a path where no
    file exists yet: for what a command does without a store, or to an older or foreign file."""
    path = tmp_path / "evalstore.duckdb"
    if request.node.get_closest_marker("no_store") is None:
        shutil.copyfile(_empty_store, path)
    return path


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


@pytest.fixture(autouse=True)
def _piped_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables in the piped width (220) unless a test sets $COLUMNS: pytest-xdist's workers
    inherit COLUMNS=80, which `evalstore`'s tables honour."""
    monkeypatch.delenv("COLUMNS", raising=False)


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


# -- markers: the fast loop is `pytest -m "not slow and not spark and not browser"` ------------

# Fixtures that start an external program: a test using one gets its marker.
_FIXTURE_MARKS = {"spark": "spark", "browser": "browser"}


def _measured_slow() -> frozenset[str]:
    """The node ids in tests/measured_slow.txt (tools/measure_fast_loop.py writes it: the tests
    measured over the fast loop's per-test budget); none while that tool measures them again."""
    if os.environ.get("EVALSTORE_TESTS_UNMEASURED"):
        return frozenset()
    text = (Path(__file__).parent / "measured_slow.txt").read_text()
    lines = (line for line in text.splitlines() if line and not line.startswith("#"))
    return frozenset(line.split(" ", 1)[1] for line in lines)


@pytest.hookimpl(tryfirst=True)  # before -m and -k deselect
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks from fixtures, and ``@pytest.mark.slow_after(n)``: a parametrized test whose
    cases after its first ``n`` (in the order they are written) are slow, so the fast loop
    runs a sample of a large family of cases and CI runs them all; and the tests measured over
    the fast loop's budget (tests/measured_slow.txt)."""
    cases: collections.Counter[tuple[str, str]] = collections.Counter()
    measured = _measured_slow()
    for item in items:
        if item.nodeid in measured:
            item.add_marker(pytest.mark.slow)
        for fixture, mark in _FIXTURE_MARKS.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(mark)
        sample = item.get_closest_marker("slow_after")
        if sample is not None:
            (n,) = sample.args
            assert isinstance(n, int) and n >= 1, f"{item.nodeid}: slow_after takes n >= 1"
            key = (str(item.path), getattr(item, "originalname", item.name))
            cases[key] += 1
            if cases[key] > n:
                item.add_marker(pytest.mark.slow)


def export_lists(n_groups: int, n_items: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Ranked lists with every label kind, distinct scores (the export and import tests)."""
    rng = np.random.default_rng(seed)
    return {
        "group_id": np.repeat(np.arange(n_groups), n_items),
        "item_id": np.tile(np.arange(n_items), n_groups),
        "score": rng.standard_normal(n_groups * n_items),
        "label": np.resize([1, -1, 0, -1], n_groups * n_items),
    }


@contextlib.contextmanager
def unwritable(folder: Path) -> Iterator[Path]:
    """A folder nobody can create files in: without write permission, and for root, whom
    permissions do not stop, immutable (chattr +i)."""
    folder.mkdir(exist_ok=True)
    root = os.geteuid() == 0
    if root:
        subprocess.run(["chattr", "+i", str(folder)], check=True)
    else:
        folder.chmod(0o555)
    try:
        with pytest.raises(OSError):
            (folder / "probe").write_text("x")
        yield folder
    finally:
        if root:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        else:
            folder.chmod(0o755)


def ingest_lists(store: Store, run: str, lists: dict[str, tuple[list[float], list[int]]]) -> None:
    """Ingest small retrieval lists ``{query: (scores, labels)}`` as ``run``; item ids are
    ``<query>-<position>``."""
    rows: dict[str, list[Any]] = {"group_id": [], "item_id": [], "score": [], "label": []}
    for q, (scores, labels) in lists.items():
        rows["group_id"] += [q] * len(scores)
        rows["item_id"] += [f"{q}-{i}" for i in range(len(scores))]
        rows["score"] += [float(s) for s in scores]
        rows["label"] += labels
    store.ingest(rows, task="retrieval", run=run, git_commit=None)


def training_tables(con: Any, files: list[Any], *, drop: bool = False) -> None:
    """Give a store kept at an older schema by a test the tables of schemas 22 (runs from a
    training loop) and 23 (cameras and pose estimates of keypoint pairs), which today's code
    reads on every evaluate and remove, or take them away again before the test upgrades the
    store (the migrations make them)."""
    if drop:
        con.execute("drop view v_steps; drop table run_steps; drop table run_state")
        con.execute("drop table pair_cameras; drop table pose_estimates")
        return
    for version in (22, 23):
        con.execute(next(path for v, _, path in files if v == version).read_text())
