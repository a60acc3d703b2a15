"""Rich tables for a terminal, and the same tables written directly where that gives what
rich would print (rich lays out and styles every cell: a third of a second for a few hundred
rows). Rich is imported when a table is made, not with the module."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evalstore.render.cells import best_rows, cell, mean_sd, merged
from evalstore.render.layout import clip

if TYPE_CHECKING:
    import polars as pl
    from rich.table import Table

__all__ = [
    "fit",
    "lines",
    "numeric_columns",
    "plain",
    "rich_table",
    "rows_table",
    "rows_text",
    "table_text",
]


def rich_table(
    frame: pl.DataFrame,
    title: str | None = None,
    higher: Mapping[str, bool] | None = None,
    width: int | None = None,
) -> Table:
    """A rich table of ``frame``; user strings are shown as text, never as markup. With
    ``higher`` (column -> higher is better), a column's ``<col> sd`` companion is shown as
    mean ± sd and its best value in bold. ``width``: the console's (see :func:`fit`)."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    if higher is None:
        right = [dtype.is_numeric() for dtype in frame.schema.values()]
        return rows_table(frame.columns, frame.iter_rows(), right, title, width)
    table = Table(title=title, box=box.SIMPLE_HEAD, header_style="bold")
    shown = merged(frame)
    best = best_rows(frame, higher)
    for name in shown:
        numeric = frame.schema[name].is_numeric()
        table.add_column(name, justify="right" if numeric else "left", overflow="fold")
    for i in range(frame.height):
        cells = []
        for name in shown:
            text = mean_sd(frame, name, i, " ± ") if name in higher else cell(frame[name][i])
            cells.append(Text(text, style="bold" if i in best.get(name, set()) else ""))
        table.add_row(*cells)
    return fit(table, width)


def fit(table: Table, width: int | None) -> Table:
    """Give each column its natural width (the widest cell) when they all fit in ``width``:
    the layout rich would choose, without measuring every cell again on print (half the
    time of a 300-row table)."""
    if width is None or not table.columns:
        return table
    natural = [
        max([_text_width(column.header)] + [_text_width(c) for c in column.cells])
        for column in table.columns
    ]
    if sum(natural) + 3 * len(natural) + 2 <= width:  # padding and rules, with room to spare
        for column, w in zip(table.columns, natural, strict=True):
            column.width = w
    return table


def table_text(table: Table, ansi: bool) -> str | None:
    """What rich prints for a table that :func:`fit` gave its widths, written directly (rich
    lays out and styles every cell: a third of a second for a few hundred rows), or None
    where it cannot be sure to match: a title, another box, a cell with a style or with
    characters other than printable ASCII. ``ansi``: the console styles its output (the
    header bold). ``tests/test_startup.py`` compares both ways."""
    from rich import box
    from rich.text import Text

    if table.box is not box.SIMPLE_HEAD or table.title or not table.columns:
        return None
    shape: list[tuple[int, bool]] = []  # (width, right-justified) per column
    headers: list[str] = []
    cells: list[list[str]] = []
    for column in table.columns:
        texts = list(column.cells)
        header = column.header
        if column.width is None or not isinstance(header, str) or not plain(header):
            return None
        if not all(
            isinstance(c, Text) and not c.style and not c.spans and plain(c.plain) for c in texts
        ):
            return None
        shape.append((column.width, column.justify == "right"))
        headers.append(header)
        cells.append([c.plain for c in texts if isinstance(c, Text)])
    return lines(shape, headers, cells, ansi)


def rows_text(
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    width: int,
    numeric: Sequence[bool] | None = None,
) -> str | None:
    """:func:`table_text` of :func:`rows_table` for a console without styles, built without
    rich (whose import a short command need not pay), or None where rich must lay it out."""
    rows = list(rows)
    numeric = numeric_columns(rows, len(columns)) if numeric is None else numeric
    cells = [[cell(r[i]) for r in rows] for i in range(len(columns))]
    if not all(plain(c) for c in columns) or not all(plain(c) for col in cells for c in col):
        return None
    natural = [max([len(c)] + [len(v) for v in col]) for c, col in zip(columns, cells, strict=True)]
    if sum(natural) + 3 * len(natural) + 2 > width or not columns:
        return None
    return lines(list(zip(natural, numeric, strict=True)), list(columns), cells, ansi=False)


def lines(
    shape: Sequence[tuple[int, bool]],
    headers: Sequence[str],
    cells: Sequence[Sequence[str]],
    ansi: bool,
) -> str:
    """Rich's SIMPLE_HEAD layout of columns of the given (width, right-justified), of
    printable ASCII cells; a cell wider than its column is cut with an ellipsis (rich's
    ``no_wrap`` and ``overflow="ellipsis"``)."""

    def line(values: Sequence[str], bold: bool) -> str:
        parts = []
        for (width, right), value in zip(shape, values, strict=True):
            value = clip(value, width) if len(value) > width else value
            text = value.rjust(width) if right else value.ljust(width)
            parts.append(f"{_B} {_E}{_B}{text}{_E}{_B} {_E}" if bold else f" {text} ")
        return " " + " ".join(parts) + " "

    total = sum(w + 3 for w, _ in shape) + 1  # padding and a space between, an edge each side
    out = [" " * total, line(headers, ansi), " " + "\u2500" * (total - 2) + " "]
    out += [line(row, False) for row in zip(*cells, strict=True)]
    out.append(" " * total)
    return "\n".join(out) + "\n"


_B, _E = "\x1b[1m", "\x1b[0m"


def plain(text: str) -> bool:
    """Printable ASCII only: text whose width is its length, written as rich would."""
    return text.isascii() and text.isprintable()


def numeric_columns(rows: Sequence[Sequence[Any]], n: int) -> list[bool]:
    """Per column: every value is a number (or null), so the column is right-justified."""
    return [
        all(
            isinstance(r[i], (int, float)) and not isinstance(r[i], bool)
            for r in rows
            if r[i] is not None
        )
        for i in range(n)
    ]


def _text_width(value: Any) -> int:
    from rich.cells import cell_len
    from rich.text import Text

    text = value.plain if isinstance(value, Text) else str(value)
    return max((cell_len(line) for line in text.split("\n")), default=0)


def rows_table(
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    numeric: Sequence[bool] | None = None,
    title: str | None = None,
    width: int | None = None,
) -> Table:
    """The rich table of :func:`rich_table` from plain rows, without a frame. ``numeric``
    (per column) right-aligns; by default a column whose values are numbers (or null) is."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    rows = list(rows)
    numeric = numeric_columns(rows, len(columns)) if numeric is None else numeric
    table = Table(title=title, box=box.SIMPLE_HEAD, header_style="bold")
    for name, right in zip(columns, numeric, strict=True):
        table.add_column(name, justify="right" if right else "left", overflow="fold")
    for row in rows:
        table.add_row(*(Text(cell(v)) for v in row))
    return fit(table, width)
