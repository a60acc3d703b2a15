"""A table command's output on a terminal of a given width: the rich tables of
:func:`evalstore.render.layout.plan` (constant columns folded into a caption, numbers whole,
long text cut with an ellipsis, blocks of columns where one table cannot fit) and the
caption's lines.

:func:`frame_screen` and :func:`rows_screen` make a :class:`Screen`; :func:`screen_text`
writes one directly where that gives what rich would print, and :func:`rows_screen_text`
writes plain rows without importing rich at all (a short command need not pay for it).
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalstore.render.cells import best_rows, cell, mean_sd, merged
from evalstore.render.layout import Plan, plan
from evalstore.render.terminal import lines, numeric_columns, plain, table_text

if TYPE_CHECKING:
    import polars as pl
    from rich.table import Table

__all__ = ["Screen", "frame_screen", "rows_screen", "rows_screen_text", "screen_text"]


@dataclass
class Screen:
    """What a table command prints: its title, its tables one under another, then the
    caption (each title and caption line starts with a space, the tables' edge)."""

    tables: list[Table] = field(default_factory=list)
    caption: tuple[str, ...] = ()
    title: tuple[str, ...] = ()


def _constant(values: Sequence[Any]) -> bool:
    return len({repr(v) for v in values}) == 1


def frame_screen(
    frame: pl.DataFrame,
    width: int,
    title: str | None = None,
    higher: Mapping[str, bool] | None = None,
) -> Screen:
    """``frame`` laid out in ``width`` cells. With ``higher`` (column -> higher is better),
    a column's ``<col> sd`` companion is shown as mean ± sd and its best value in bold; those
    columns are never folded."""
    higher = higher or {}
    shown = merged(frame) if higher else list(frame.columns)
    best = best_rows(frame, higher)
    raw = [frame[name].to_list() for name in shown]
    texts = [
        [mean_sd(frame, name, i, " ± ") for i in range(frame.height)]
        if name in higher
        else [cell(v) for v in values]
        for name, values in zip(shown, raw, strict=True)
    ]
    right = [frame.schema[name].is_numeric() for name in shown]
    layout = plan(
        shown,
        texts,
        right,
        width,
        constant=[_constant(v) for v in raw],
        protected=[i for i, name in enumerate(shown) if name in higher],
    )
    bold = [best.get(name, set()) for name in shown]
    return _build(layout, shown, texts, right, title_lines(title, width), bold)


def rows_screen(
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    width: int,
    numeric: Sequence[bool] | None = None,
    title: str | None = None,
) -> Screen:
    """:func:`frame_screen` of plain rows, without a frame. ``numeric`` (per column)
    right-aligns; by default a column whose values are numbers (or null) is."""
    rows = list(rows)
    right = numeric_columns(rows, len(columns)) if numeric is None else list(numeric)
    texts = [[cell(r[i]) for r in rows] for i in range(len(columns))]
    constant = [_constant([r[i] for r in rows]) for i in range(len(columns))]
    layout = plan(columns, texts, right, width, constant=constant)
    title_shown = title_lines(title, width)
    return _build(layout, columns, texts, right, title_shown, [set() for _ in columns])


def title_lines(title: str | None, width: int) -> tuple[str, ...]:
    """A table's title in lines of at most ``width`` cells, indented by one space."""
    if not title:
        return ()
    return tuple(" " + line for line in textwrap.wrap(title, max(width - 1, 10)))


def _build(
    layout: Plan,
    headers: Sequence[str],
    texts: Sequence[Sequence[str]],
    right: Sequence[bool],
    title: tuple[str, ...],
    bold: Sequence[set[int]],
) -> Screen:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    tables = []
    for block in layout.blocks:
        table = Table(box=box.SIMPLE_HEAD, header_style="bold")
        for i, w in block:
            table.add_column(
                headers[i],
                justify="right" if right[i] else "left",
                no_wrap=True,
                overflow="ellipsis",
                width=w,
            )
        for row in range(len(texts[0]) if texts else 0):
            table.add_row(
                *(Text(texts[i][row], style="bold" if row in bold[i] else "") for i, _ in block)
            )
        tables.append(table)
    return Screen(tables=tables, caption=layout.caption, title=title)


def screen_text(screen: Screen, ansi: bool) -> str | None:
    """What rich prints for ``screen`` (then its caption), or None where rich must print a
    table (see :func:`evalstore.render.terminal.table_text`)."""
    parts = [table_text(table, ansi) for table in screen.tables]
    if any(p is None for p in parts):
        return None
    body = "".join(p for p in parts if p is not None)
    return (
        "".join(f"{t}\n" for t in screen.title) + body + "".join(f"{c}\n" for c in screen.caption)
    )


def rows_screen_text(
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    width: int,
    numeric: Sequence[bool] | None = None,
) -> str | None:
    """:func:`screen_text` of :func:`rows_screen` for a console without styles, built
    without rich, or None where rich must lay it out (a cell other than printable ASCII)."""
    rows = list(rows)
    right = numeric_columns(rows, len(columns)) if numeric is None else list(numeric)
    texts = [[cell(r[i]) for r in rows] for i in range(len(columns))]
    if not columns or not all(plain(c) for c in (*columns, *(t for col in texts for t in col))):
        return None
    constant = [_constant([r[i] for r in rows]) for i in range(len(columns))]
    layout = plan(columns, texts, right, width, constant=constant)
    out = [
        lines(
            [(w, right[i]) for i, w in block],
            [columns[i] for i, _ in block],
            [texts[i] for i, _ in block],
            ansi=False,
        )
        for block in layout.blocks
    ]
    return "".join(out) + "".join(f"{c}\n" for c in layout.caption)
