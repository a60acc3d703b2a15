"""What every command shares: the Typer app, the common options, output and errors.

The ``command`` decorator turns errors raised on purpose by the library
(:class:`~evalstore.errors.EvalstoreError`) into one ``Error: ...`` line on stderr and exit
code 1; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from evalstore.cli.interrupts import (
    INTERRUPTS,
    held_interrupts,
    interrupted,
    watch_interrupts,
)
from evalstore.errors import EvalstoreError, cli_spelling

if TYPE_CHECKING:
    import polars as pl
    from rich.console import Console

    from evalstore.db.connection import Progress
    from evalstore.render import Screen

app = typer.Typer(
    name="evalstore",
    help="Track evaluation runs in DuckDB and compute exact metrics with SQL.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


@app.callback()
def _root(
    metrics_dir: Annotated[
        list[Path] | None,
        typer.Option(
            "--metrics-dir",
            help="A folder of your own metrics, one SQL file each (repeatable; also "
            "$EVALSTORE_METRICS and ./metrics/ when present).",
        ),
    ] = None,
) -> None:
    """Load the users' metrics before any command runs (none for a command's --help, and
    nothing is imported when no folder is given: a start stays quick)."""
    given = metrics_dir or []
    if "--help" in sys.argv[1:] or not (
        given or os.environ.get("EVALSTORE_METRICS") or Path("metrics").is_dir()
    ):
        return
    from evalstore.metrics import user as user_metrics

    try:
        user_metrics.load_metrics(user_metrics.metric_dirs(given))
    except EvalstoreError as exc:
        err.print(f"Error: {exc}", markup=False)
        raise typer.Exit(code=exc.exit_code) from None


@functools.cache
def console(stderr: bool = False, width: int | None = None) -> Console:
    """The rich console of stdout (or stderr), made on first use: importing rich is a good
    part of the cost of a start, and `--help` does not need it. ``width``: a stdout console
    of that width (the tables' own, :func:`table_width`)."""
    from rich.console import Console

    if stderr:
        return Console(stderr=True, highlight=False, soft_wrap=True)
    if width is None and not sys.stdout.isatty():
        width = PIPE_WIDTH  # piped output keeps whole rows rather than folding them at 80
    return Console(highlight=False, soft_wrap=True, width=width)


def table_width() -> int:
    """The width tables are laid out in: ``$COLUMNS`` where set, else the terminal's, else
    (piped) :data:`PIPE_WIDTH`."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return int(console().width) if sys.stdout.isatty() else PIPE_WIDTH


class _Deferred:
    """``out.print(...)`` / ``err.print(...)``: the console of :func:`console`, made on use."""

    def __init__(self, stderr: bool) -> None:
        self.stderr = stderr

    def __getattr__(self, name: str) -> Any:
        return getattr(console(self.stderr), name)


out = _Deferred(stderr=False)
err = _Deferred(stderr=True)

F = TypeVar("F", bound=Callable[..., Any])


class Fmt(str, Enum):
    table = "table"
    json = "json"
    nl = "nl"  # one JSON object a line
    csv = "csv"
    tsv = "tsv"
    md = "md"
    latex = "latex"


DbOpt = Annotated[
    Path | None,
    typer.Option(
        "--db", envvar="EVALSTORE_DB", help="Database file [default: ./evalstore.duckdb]."
    ),
]
LockOpt = Annotated[
    float,
    typer.Option(
        "--lock-timeout", help="Seconds to wait while another process holds the database."
    ),
]
FormatOpt = Annotated[Fmt, typer.Option("--format", "-f", help="Output format.")]
ProtocolOpt = Annotated[
    str | None,
    typer.Option(
        "--protocol",
        help="An official protocol (hpatches, voc07, trec, ...; see `evalstore protocols`): "
        "its metrics, tie policy and averaging, recorded with the values.",
    ),
]
TiesOpt = Annotated[
    str | None,
    typer.Option(
        "--ties",
        help="grouped | optimistic | pessimistic | input | docid [default: grouped, or the "
        "protocol's].",
        show_default=False,
    ),
]
RunArg = Annotated[
    str, typer.Argument(help="Run: NAME, EXPERIMENT/NAME or id:N.", show_default=False)
]


_INTERRUPTED = "interrupted; what was committed before stays, the rest was rolled back"


def _waiting(message: str) -> None:
    err.print(f"{message} (another process has it; --lock-timeout)", markup=False)


def _upgraded(message: str) -> None:
    err.print(message, markup=False)


def command(
    name: str,
    *,
    interrupt: Callable[[], str] | None = None,
    group: typer.Typer | None = None,
    context_settings: dict[str, Any] | None = None,
) -> Callable[[F], F]:
    """Register the command ``name`` (of ``group``, default the app) whose library errors end
    as one line and exit code 1, and a Ctrl-C as one line and exit code 130 (``interrupt()``:
    the message, saying what the store holds now); ``context_settings`` as Typer's."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*a: Any, **kw: Any) -> Any:
            INTERRUPTS.update(signalled=False, told=False, finished=False)
            watch_interrupts()
            try:
                with held_interrupts():  # the first import of DuckDB
                    from evalstore.db.connection import notify_upgrades, notify_waits

                notify_waits(_waiting)  # a command that waits for a store's lock says so, once
                notify_upgrades(_upgraded)  # and a writer that upgrades a store's schema
                with cli_spelling():  # messages name options by their flags
                    result = fn(*a, **kw)
            except BaseException as exc:
                # after a Ctrl-C, whatever error it surfaced as (DuckDB's wrapping of the
                # KeyboardInterrupt of a stream it read, the end of a reader it stopped) is
                # the interrupt
                if not (interrupted(exc) or INTERRUPTS["signalled"]):
                    if isinstance(exc, EvalstoreError):
                        err.print(f"Error: {exc}", markup=False)
                        raise typer.Exit(code=exc.exit_code) from None
                    raise
                said = interrupt() if interrupt is not None else _INTERRUPTED
                err.print(f"Error: {said}", markup=False)
                INTERRUPTS["told"] = True
                raise typer.Exit(code=130) from None
            INTERRUPTS["finished"] = True
            return result

        (group or app).command(name, context_settings=context_settings)(wrapper)
        return fn

    return decorate


def emit(
    frame: pl.DataFrame,
    fmt: Fmt,
    title: str | None = None,
    *,
    higher: Mapping[str, bool] | None = None,
    caption: str | None = None,
) -> None:
    """Print a result frame in the chosen format. ``higher`` (column -> higher is better)
    marks metric columns: on a terminal, in Markdown and in LaTeX their ``<col> sd``
    companions fold into mean ± sd and the best value is bold. LaTeX's caption says the
    protocol of the values (the frame's ``protocol`` column) after ``caption`` or
    ``title``."""
    from evalstore import render

    if fmt is Fmt.table:
        print_screen(render.frame_screen(frame, table_width(), title, higher))
    elif fmt is Fmt.latex:
        typer.echo(render.latex_table(frame, _caption(frame, caption or title), higher))
    elif fmt is Fmt.md and higher:
        typer.echo(render.markdown_table(frame, higher))
    else:
        typer.echo(render.to_text(frame, fmt.value))


def emit_rows(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], fmt: Fmt, numeric: Sequence[bool]
) -> None:
    """:func:`emit` of plain rows (``numeric``: the columns a frame would hold as numbers),
    without a frame; CSV and TSV of booleans, integers and text only."""
    from evalstore import render

    if fmt is not Fmt.table:
        typer.echo(render.rows_to_text(columns, rows, fmt.value))
        return
    width = table_width()
    # piped, with nothing that makes rich style it: what rich prints, written without rich
    if not sys.stdout.isatty() and not {"FORCE_COLOR", "TTY_COMPATIBLE"} & os.environ.keys():
        text = render.rows_screen_text(columns, rows, width, numeric)
        if text is not None:
            sys.stdout.write(text)
            return
    print_screen(render.rows_screen(columns, rows, width, numeric))


PIPE_WIDTH = 220  # the console's width when the output is not a terminal


def print_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Print rows as render.rows_screen lays them out; piped output that needs no layout by
    rich is written without importing it."""
    from evalstore import render

    width = table_width()
    if not sys.stdout.isatty():
        text = render.rows_screen_text(columns, rows, width)
        if text is not None:
            sys.stdout.write(text)
            return
    print_screen(render.rows_screen(columns, rows, width))


def print_screen(screen: Screen) -> None:
    """Print a table command's tables and caption on the standard output, in the tables'
    width, written directly where that gives what rich would print (render.screen_text)."""
    from evalstore import render

    shown = console(width=table_width())
    text = render.screen_text(screen, ansi=shown.is_terminal and shown.color_system is not None)
    if text is not None:
        shown.file.write(text)
        return
    for line in screen.title:
        shown.print(line, markup=False)
    for table in screen.tables:
        shown.print(table)
    for line in screen.caption:
        shown.print(line, markup=False)


def _caption(frame: pl.DataFrame, caption: str | None) -> str:
    """The caption of a LaTeX table: the text given, then the protocol of the values."""
    parts = [caption] if caption else []
    if "protocol" in frame.columns and frame.height:
        names = sorted({str(p) for p in frame["protocol"].to_list()})
        parts.append(
            "Protocol: " + ", ".join("evalstore default" if p == "default" else p for p in names)
        )
    return ". ".join(parts) + ("." if parts else "")


@contextlib.contextmanager
def debug_log(enabled: bool) -> Iterator[None]:
    """With ``enabled``, for the block: the ``evalstore`` logger (and its children, as
    ``evalstore.ingest.direct``) at DEBUG, each record printed on stderr as one
    ``evalstore: <message>`` line; as it was afterwards."""
    if not enabled:
        yield
        return
    import logging

    logger = logging.getLogger("evalstore")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("evalstore: %(message)s"))
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@contextlib.contextmanager
def progress_bar(enabled: bool, description: str) -> Iterator[Progress | None]:
    """A transient rich progress display on stderr, shown only on a terminal after 1 s."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.progress import Progress as RichProgress
    from rich.progress import SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

    started = time.monotonic()
    shown: tuple[RichProgress, TaskID] | None = None

    def update(stage: str, done: int, total: int | None) -> None:
        nonlocal shown
        if shown is None:
            if time.monotonic() - started < 1.0:
                return
            bar = RichProgress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                TextColumn("{task.completed:,} rows"),
                TimeElapsedColumn(),
                console=console(True),
                transient=True,
            )
            bar.start()
            shown = (bar, bar.add_task(description, total=total))
        bar, task_id = shown
        bar.update(task_id, completed=done, total=total, description=f"{description}: {stage}")

    try:
        yield update
    finally:
        if shown is not None:
            shown[0].stop()
