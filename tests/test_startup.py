"""What a start costs, in imports rather than seconds: ``evalstore --help`` and every
command's ``--help`` load none of the heavy libraries, ``import evalstore`` loads the public
API on first use, and ``evalstore runs`` prints its table and JSON without pyarrow.

Each check runs in a fresh interpreter and reads its ``sys.modules`` at the end. bench/startup.py
measures the seconds."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.testing
from conftest import examples, ranked
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from evalstore import Store, render
from evalstore.analysis import statistics as stats
from evalstore.cli import app
from evalstore.cli import compare as compare_cli

#: never loaded by a start or a --help
HEAVY = (
    "plotly",
    "pyspark",
    "cv2",
    "sklearn",
    "polars",
    "pyarrow",
    "numpy",
    "scipy",
    "duckdb",
    "pydantic",  # typer 0.29 validates options with it: 0.2 CPU-s on every command
)

CHILD = """
import json, sys
{setup}
print(json.dumps({{
    "loaded": sorted(m for m in {heavy!r} if m in sys.modules),
    "code": code,
}}))
"""

RUN_APP = """
from evalstore.cli import app
try:
    app(args=sys.argv[1:], prog_name="evalstore")
    code = 0
except SystemExit as exit:
    code = exit.code
"""


def _child(setup: str, *args: str, heavy: tuple[str, ...] = HEAVY) -> dict[str, Any]:
    program = CHILD.format(setup=setup, heavy=heavy)
    done = subprocess.run(
        [sys.executable, "-c", program, *args], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _commands(group: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path of the app, subcommand groups (those with commands) included."""
    paths = []
    for name, cmd in sorted(group.commands.items()):
        paths.append((*prefix, name))
        if getattr(cmd, "commands", None):
            paths += _commands(cmd, (*prefix, name))
    return paths


COMMANDS = _commands(typer.main.get_group(app))


def test_the_commands_are_found() -> None:
    assert {("runs",), ("compare",), ("eval",), ("dashboard",), ("export",)} <= set(COMMANDS)


@pytest.mark.slow  # a fresh process
def test_importing_the_cli_loads_no_heavy_library() -> None:
    assert _child("import evalstore.cli\ncode = 0")["loaded"] == []


@pytest.mark.slow  # a fresh process
def test_importing_the_package_loads_no_heavy_library() -> None:
    assert _child("import evalstore\ncode = 0")["loaded"] == []


@pytest.mark.slow  # a fresh process
@pytest.mark.parametrize("path", [(), *COMMANDS], ids=lambda p: " ".join(p) or "evalstore")
def test_help_loads_no_heavy_library(path: tuple[str, ...]) -> None:
    got = _child(RUN_APP, *path, "--help")
    assert got == {"loaded": [], "code": 0}


@pytest.mark.slow  # a fresh process
def test_the_public_api_loads_on_use_and_keeps_its_functions() -> None:
    """Four functions share their module's name; importing the module (as the library and
    the commands do) leaves the package attribute the function."""
    setup = """
import evalstore
import evalstore.analysis.compare, evalstore.analysis.evaluate
import evalstore.analysis.configurations, evalstore.analysis.leaderboard
import evalstore.analysis.gate
from evalstore import (
    METRICS, IngestResult, Store, __version__, check, compare, evaluate, groups, history,
    leaderboard, stored_metrics,
)
import inspect
functions = [check, compare, evaluate, groups, history, leaderboard, stored_metrics]
assert all(inspect.isfunction(f) for f in functions), functions
for name in ("compare", "evaluate", "groups", "leaderboard"):
    assert inspect.isfunction(getattr(evalstore, name)), name
    module = "configurations" if name == "groups" else name
    assert getattr(evalstore, name) is getattr(sys.modules["evalstore.analysis." + module], name)
assert inspect.isclass(Store) and inspect.isclass(IngestResult) and METRICS
assert isinstance(__version__, str)
assert set(evalstore.__all__) <= set(dir(evalstore))
try:
    evalstore.no_such_name
except AttributeError:
    code = 0
"""
    assert _child(setup, heavy=())["code"] == 0


def test_the_package_names_resolve_in_process() -> None:
    import evalstore

    for name in evalstore.__all__:
        assert getattr(evalstore, name) is not None
    assert evalstore.compare.__module__ == "evalstore.analysis.compare"
    with pytest.raises(AttributeError):
        _ = evalstore.not_a_name  # type: ignore[attr-defined]


def test_the_compare_help_names_the_stats_threshold() -> None:
    """--resample's help quotes MIN_LISTS without importing stats (NumPy) at start-up."""
    assert compare_cli.MIN_LISTS == stats.MIN_LISTS


@pytest.fixture
def runs_db(tmp_path: Path) -> Path:
    db = tmp_path / "runs.duckdb"
    with Store(db) as store:
        store.ingest(ranked(), task="retrieval", run="exp/a", git_commit=None, tags=["x"])
        store.ingest(
            ranked(seed=1), task="verification", run="b", params={"lr": 0.1}, git_commit="f" * 40
        )
    return db


@pytest.mark.slow  # a fresh process
def test_runs_lists_without_pyarrow(runs_db: Path) -> None:
    """The table and JSON of `runs` skip the frame (polars still comes with the store)."""
    for fmt in ("table", "json"):
        got = _child(RUN_APP, "runs", "--db", str(runs_db), "-f", fmt, heavy=("pyarrow", "numpy"))
        assert got == {"loaded": [], "code": 0}


@pytest.mark.parametrize(
    "args", [(), ("--sort", "name"), ("--tag", "x"), ("-e", "default", "-n", "1")]
)
def test_runs_prints_what_the_frame_prints(runs_db: Path, args: tuple[str, ...]) -> None:
    """The rows fetched as tuples render exactly as Store.runs' frame did."""
    filters: dict[str, Any] = {"sort": "created_at"}
    if "--sort" in args:
        filters["sort"] = "name"
    if "--tag" in args:
        filters["tag"] = "x"
    if "-e" in args:
        filters |= {"experiment": "default", "limit": 1}
    with Store(runs_db, read_only=True) as store:
        frame = store.runs(**filters)
    shown = frame.select(
        "run_id", "experiment", "name", "created_at", "tasks", "n_rows", "tags", "git_commit"
    )
    shown = shown.with_columns(shown["git_commit"].str.slice(0, 10))
    buf = io.StringIO()
    console = Console(file=buf, highlight=False, soft_wrap=True, width=220)
    screen = render.frame_screen(shown, 220)
    for part in [*screen.tables, *screen.caption]:
        console.print(part, markup=False)
    runner = typer.testing.CliRunner()
    table = runner.invoke(app, ["runs", "--db", str(runs_db), *args])
    assert table.exit_code == 0, table.output
    assert table.stdout == buf.getvalue()
    as_json = runner.invoke(app, ["runs", "--db", str(runs_db), "-f", "json", *args])
    expected = [{**r, "params": json.loads(r["params"])} for r in frame.to_dicts()]
    assert json.loads(as_json.stdout) == render.jsonable(expected)


def test_runs_of_an_empty_store(tmp_path: Path) -> None:
    db = tmp_path / "empty.duckdb"
    Store(db).close()
    runner = typer.testing.CliRunner()
    assert json.loads(runner.invoke(app, ["runs", "--db", str(db), "-f", "json"]).stdout) == []
    table = runner.invoke(app, ["runs", "--db", str(db)])
    assert table.exit_code == 0 and "run_id" in table.stdout


@pytest.mark.parametrize("width", [40, 120, 220])
def test_fitted_tables_print_as_rich_lays_them_out(width: int) -> None:
    """Natural column widths set ahead of printing change nothing on the screen, whether
    the table fits the console or not."""
    import io

    from rich.console import Console

    from evalstore.render import rows_table

    columns = ["run_id", "run", "tags", "notes"]
    rows = [
        (i, f"exp/run-{i}", "a, b" if i % 2 else "", "line\nbreak" if i == 3 else None)
        for i in range(40)
    ]

    def shown(w: int | None) -> str:
        console = Console(file=io.StringIO(), width=width, highlight=False, soft_wrap=True)
        console.print(rows_table(columns, rows, width=w))
        return console.file.getvalue()  # type: ignore[attr-defined]

    assert shown(width) == shown(None)
    rows.clear()  # no rows: the header alone
    assert shown(width) == shown(None)


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.integers(-(10**6), 10**6), st.floats(allow_nan=False)),
            st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=12),
        ),
        max_size=8,
    ),
    st.booleans(),
)
def test_tables_written_directly_are_what_rich_prints(rows: list[tuple], ansi: bool) -> None:
    import io

    from rich.console import Console

    from evalstore.render import rows_table, table_text

    table = rows_table(["value", "name"], rows, width=200)
    console = Console(
        file=io.StringIO(),
        width=200,
        highlight=False,
        soft_wrap=True,
        force_terminal=ansi,
        color_system="standard" if ansi else None,
    )
    console.print(table)
    assert table_text(table, ansi) == console.file.getvalue()  # type: ignore[attr-defined]


def test_tables_rich_must_lay_out_are_left_to_rich() -> None:
    from evalstore.render import rows_table, table_text

    assert table_text(rows_table(["a"], [("é",)], width=200), False) is None
    assert table_text(rows_table(["a"], [("x\ny",)], width=200), False) is None
    assert table_text(rows_table(["a"], [("x" * 300,)], width=200), False) is None  # no fit
    assert table_text(rows_table(["a"], [("x",)], title="T", width=200), False) is None


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.integers(-(10**6), 10**6), st.floats(allow_nan=False)),
            st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=12),
            st.one_of(st.none(), st.booleans()),
        ),
        max_size=8,
    ),
)
def test_rows_written_without_rich_are_what_rich_prints(rows: list[tuple]) -> None:
    """The piped `runs` table, built without rich, equals rich's print of rows_table."""
    from rich.console import Console

    from evalstore.render import rows_table, rows_text

    console = Console(file=io.StringIO(), width=220, highlight=False, soft_wrap=True)
    console.print(rows_table(["value", "name", "flag"], rows, width=220))
    assert rows_text(["value", "name", "flag"], rows, 220) == console.file.getvalue()  # type: ignore[attr-defined]


@pytest.mark.slow  # a fresh process
def test_piped_runs_loads_no_rich(tmp_path: Path) -> None:
    db = tmp_path / "db.duckdb"
    Store(db).close()
    heavy = (*(m for m in HEAVY if m != "duckdb"), "rich")
    got = _child(RUN_APP, "runs", "--db", str(db), heavy=heavy)
    assert got == {"loaded": [], "code": 0}


def test_a_command_runs_in_an_app_of_its_own() -> None:
    """`evalstore COMMAND ...` builds the click objects of that command alone (a quarter of a
    quick command's start); anything else gets the whole app, with its usage and errors."""
    from evalstore.cli import app, app_for

    lean = app_for(["runs", "--db", "x.duckdb"])
    assert lean is not app and [c.name for c in lean.registered_commands] == ["runs"]
    assert lean.registered_callback is app.registered_callback  # --metrics-dir still loads
    for argv in (["--metrics-dir", "d", "runs"], ["metric", "test", "m"], [], ["rns"], ["--help"]):
        assert app_for(argv) is app, argv
    assert len(app.registered_commands) > 20 and app.registered_groups  # the app is untouched
