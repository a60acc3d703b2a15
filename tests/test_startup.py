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
from hypothesis import example, given, settings
from hypothesis import strategies as st
from rich.console import Console

from evalstore import Store, render
from evalstore.analysis import statistics as stats
from evalstore.cli import app
from evalstore.cli import compare as compare_cli
from evalstore.cli import runs as runs_cli

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
    shown = frame.select(runs_cli.SHOWN)
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


# -- `evalstore sql` prints small results of plain types from Python rows ---------------------

PLAIN = st.tuples(
    st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
    st.one_of(st.none(), st.floats()),
    st.one_of(st.none(), st.floats(width=32)),
    st.one_of(st.none(), st.text(max_size=8), st.text(alphabet=',"\n\r\t |aé', max_size=4)),
    st.one_of(st.none(), st.booleans()),
    st.one_of(st.none(), st.dates()),
    st.one_of(st.none(), st.datetimes()),
)
COLUMNS = 'i bigint, x double, f float, s varchar, "a,b" boolean, d date, ts timestamp'


def _plain_table(db: Path, rows: list[tuple]) -> None:
    import duckdb

    Store(db).close()
    con = duckdb.connect(str(db))
    con.execute(f"create table t ({COLUMNS})")
    if rows:
        con.executemany("insert into t values (?, ?, ?, ?, ?, ?, ?)", rows)
    con.close()


def _sql_both_ways(
    db: Path, monkeypatch: pytest.MonkeyPatch, *args: str
) -> tuple[typer.testing.Result, typer.testing.Result]:
    """`evalstore sql ARGS` as it runs, and with the rows' path refused (the frame's)."""
    from evalstore.db import sandbox

    runner = typer.testing.CliRunner()
    lean = runner.invoke(app, ["sql", *args, "--db", str(db)])
    with monkeypatch.context() as patch:
        patch.setattr(sandbox, "run_rows", lambda *a, **k: None)
        framed = runner.invoke(app, ["sql", *args, "--db", str(db)])
    return lean, framed


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(PLAIN, max_size=6))
@example([(0, -0.0, 0.1, "", False, None, None), (None, 1e-7, None, 'a,"b"\n', None, None, None)])
def test_sql_prints_rows_as_it_prints_the_frame(
    tmp_path_factory: pytest.TempPathFactory, rows: list[tuple]
) -> None:
    db = tmp_path_factory.mktemp("plain") / "plain.duckdb"
    _plain_table(db, rows)
    with pytest.MonkeyPatch.context() as monkeypatch:
        for fmt in ("table", "json", "nl", "md", "csv", "tsv"):
            for query in ("select * from t", 'select i, s, "a,b" from t'):  # CSV: no floats
                lean, framed = _sql_both_ways(db, monkeypatch, query, "-f", fmt)
                assert lean.exit_code == framed.exit_code == 0, (lean.output, framed.output)
                assert lean.stdout == framed.stdout
                assert lean.stderr == framed.stderr


def test_sql_rows_are_fetched_without_polars_or_rich(tmp_path: Path) -> None:
    db = tmp_path / "db.duckdb"
    _plain_table(db, [(1, 0.5, 2.5, "a", True, None, None)])
    heavy = (*(m for m in HEAVY if m != "duckdb"), "rich")
    for fmt in ("table", "json", "csv"):
        got = _child(RUN_APP, "sql", 'select i, s, "a,b" from t', "-f", fmt, "--db", str(db),
                     heavy=heavy)  # fmt: skip
        assert got == {"loaded": [], "code": 0}, fmt


@pytest.mark.parametrize(
    "args",
    [
        ("select * from range(10)", "--max-rows", "3"),  # cut at --max-rows: the same note
        ("select repeat('x', 2000) as s from range(30)", "--max-mb", "0.01"),  # by bytes
        ("select * from range(30000)", "-f", "csv"),  # more rows than the rows' path takes
        ("select [1, 2] as l, 1.5::decimal(4, 2) as d",),  # not plain: the frame's path
        ("select 1 as a, 2 as a",),  # the frame's refusal of a repeated name
        ("select * from range(3)", "-f", "latex"),
        ("select 1 as x", "-f", "xml"),
        ("select nonsense",),
        ("explain select 1", "-f", "json"),
    ],
)
def test_sql_edges_print_as_the_frame_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    db = tmp_path / "db.duckdb"
    Store(db).close()
    lean, framed = _sql_both_ways(db, monkeypatch, *args)
    assert (lean.exit_code, lean.stdout, lean.stderr) == (
        framed.exit_code,
        framed.stdout,
        framed.stderr,
    )
    assert type(lean.exception) is type(framed.exception)
