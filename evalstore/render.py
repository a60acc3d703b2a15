"""Turning result frames into text: a rich table for terminals, JSON, CSV, Markdown or a
LaTeX (booktabs) table.

Nothing here prints; :mod:`evalstore.cli` decides where the text goes.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl
    from rich.table import Table

__all__ = [
    "FORMATS",
    "best_rows",
    "cell",
    "jsonable",
    "latex_table",
    "markdown_table",
    "rich_table",
    "rows_table",
    "rows_text",
    "table_text",
    "to_text",
]

FORMATS = ("table", "json", "csv", "md", "latex")
SD_SUFFIX = " sd"


def jsonable(value: Any) -> Any:
    """A value as JSON can hold it: NaN and infinities as null, times as ISO 8601 text."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def cell(value: Any) -> str:
    """One value as the text of a table cell."""
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return f"{value:.6g}" if abs(value) >= 1e-4 or value == 0 else f"{value:.3e}"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, (list, tuple)):
        return ", ".join(cell(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, default=str)
    return str(value)


def to_text(frame: pl.DataFrame, fmt: str) -> str:
    """Render ``frame`` as ``json`` (a list of objects), ``nl`` (one JSON object a line),
    ``csv``, ``tsv`` or ``md``."""
    import polars as pl  # here, not at the top: `evalstore runs` prints tables without it

    rows = frame.to_dicts()
    if fmt == "json":
        return json.dumps([jsonable(r) for r in rows], indent=2, default=str)
    if fmt == "nl":  # one JSON object a line (newline-delimited JSON)
        return "\n".join(json.dumps(jsonable(r), default=str) for r in rows)
    if fmt in ("csv", "tsv"):
        flat = frame.with_columns(
            [
                pl.col(c).cast(pl.List(pl.String)).list.join(", ")
                if isinstance(t, (pl.List, pl.Array))
                else pl.col(c).struct.json_encode()
                for c, t in frame.schema.items()
                if t.is_nested()
            ]
        )
        # bytes as hex, any other type CSV cannot hold (objects, extension types) as its text
        flat = flat.with_columns(
            pl.col(c).bin.encode("hex")
            if t == pl.Binary
            else pl.Series(c, [cell(v) for v in flat[c].to_list()], dtype=pl.String)
            for c, t in flat.schema.items()
            if not _csv_type(t)
        )
        buf = io.StringIO()
        flat.write_csv(buf, separator="\t" if fmt == "tsv" else ",")
        return buf.getvalue().rstrip("\n")
    if fmt == "md":
        header = "| " + " | ".join(frame.columns) + " |"
        rule = "|" + "|".join("---" for _ in frame.columns) + "|"
        body = [
            "| " + " | ".join(cell(r[c]).replace("|", "\\|") for c in frame.columns) + " |"
            for r in rows
        ]
        return "\n".join([header, rule, *body])
    raise ValueError(f"unknown format {fmt!r}")


def _csv_type(dtype: pl.DataType) -> bool:
    import polars as pl

    return (
        dtype.is_numeric()
        or dtype.is_temporal()
        or isinstance(dtype, (pl.String, pl.Boolean, pl.Categorical, pl.Enum, pl.Null))
    )


def best_rows(frame: pl.DataFrame, higher: Mapping[str, bool]) -> dict[str, set[int]]:
    """Per column of ``higher`` (column -> higher is better), the rows holding its best
    value (ties all count), within each experiment when the frame has that column."""
    import polars as pl

    out: dict[str, set[int]] = {}
    within = (
        frame["experiment"].to_list() if "experiment" in frame.columns else [None] * frame.height
    )
    for col, up in higher.items():
        if col not in frame.columns:
            continue
        values = frame[col].cast(pl.Float64, strict=False).to_list()
        tops: dict[Any, float] = {}
        for key, v in zip(within, values, strict=True):
            if v is not None and not math.isnan(v):
                tops[key] = v if key not in tops else (max if up else min)(tops[key], v)
        out[col] = {
            i
            for i, (key, v) in enumerate(zip(within, values, strict=True))
            if v is not None and v == tops.get(key)
        }
    return out


def _merged(frame: pl.DataFrame) -> list[str]:
    """The columns shown: each ``<col> sd`` folds into ``<col>`` as mean ± sd."""
    return [
        c
        for c in frame.columns
        if not (c.endswith(SD_SUFFIX) and c[: -len(SD_SUFFIX)] in frame.columns)
    ]


def _mean_sd(frame: pl.DataFrame, col: str, i: int, plus: str) -> str:
    value = frame[col][i]
    sd_col = col + SD_SUFFIX
    text = cell(value) if not isinstance(value, float) else f"{value:.4f}"
    if sd_col in frame.columns and frame[sd_col][i] is not None and value is not None:
        text += f"{plus}{frame[sd_col][i]:.4f}"
    return text


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
    shown = _merged(frame)
    best = best_rows(frame, higher)
    for name in shown:
        numeric = frame.schema[name].is_numeric()
        table.add_column(name, justify="right" if numeric else "left", overflow="fold")
    for i in range(frame.height):
        cells = []
        for name in shown:
            text = _mean_sd(frame, name, i, " ± ") if name in higher else cell(frame[name][i])
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
        if column.width is None or not isinstance(header, str) or not _plain(header):
            return None
        if not all(
            isinstance(c, Text) and not c.style and not c.spans and _plain(c.plain) for c in texts
        ):
            return None
        shape.append((column.width, column.justify == "right"))
        headers.append(header)
        cells.append([c.plain for c in texts if isinstance(c, Text)])
    return _lines(shape, headers, cells, ansi)


def rows_text(
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    width: int,
    numeric: Sequence[bool] | None = None,
) -> str | None:
    """:func:`table_text` of :func:`rows_table` for a console without styles, built without
    rich (whose import a short command need not pay), or None where rich must lay it out."""
    rows = list(rows)
    numeric = _numeric(rows, len(columns)) if numeric is None else numeric
    cells = [[cell(r[i]) for r in rows] for i in range(len(columns))]
    if not all(_plain(c) for c in columns) or not all(_plain(c) for col in cells for c in col):
        return None
    natural = [max([len(c)] + [len(v) for v in col]) for c, col in zip(columns, cells, strict=True)]
    if sum(natural) + 3 * len(natural) + 2 > width or not columns:
        return None
    return _lines(list(zip(natural, numeric, strict=True)), list(columns), cells, ansi=False)


def _lines(
    shape: Sequence[tuple[int, bool]],
    headers: Sequence[str],
    cells: Sequence[Sequence[str]],
    ansi: bool,
) -> str:
    """Rich's SIMPLE_HEAD layout of columns of the given (width, right-justified)."""

    def line(values: Sequence[str], bold: bool) -> str:
        parts = []
        for (width, right), value in zip(shape, values, strict=True):
            text = value.rjust(width) if right else value.ljust(width)
            parts.append(f"{_B} {_E}{_B}{text}{_E}{_B} {_E}" if bold else f" {text} ")
        return " " + " ".join(parts) + " "

    total = sum(w + 3 for w, _ in shape) + 1  # padding and a space between, an edge each side
    out = [" " * total, line(headers, ansi), " " + "\u2500" * (total - 2) + " "]
    out += [line(row, False) for row in zip(*cells, strict=True)]
    out.append(" " * total)
    return "\n".join(out) + "\n"


_B, _E = "\x1b[1m", "\x1b[0m"


def _plain(text: str) -> bool:
    return text.isascii() and text.isprintable()


def _numeric(rows: Sequence[Sequence[Any]], n: int) -> list[bool]:
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

    plain = value.plain if isinstance(value, Text) else str(value)
    return max((cell_len(line) for line in plain.split("\n")), default=0)


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
    numeric = _numeric(rows, len(columns)) if numeric is None else numeric
    table = Table(title=title, box=box.SIMPLE_HEAD, header_style="bold")
    for name, right in zip(columns, numeric, strict=True):
        table.add_column(name, justify="right" if right else "left", overflow="fold")
    for row in rows:
        table.add_row(*(Text(cell(v)) for v in row))
    return fit(table, width)


def markdown_table(frame: pl.DataFrame, higher: Mapping[str, bool]) -> str:
    """A Markdown table with each ``<col> sd`` folded into ``<col>`` as mean ± sd and the
    best value of each column of ``higher`` (column -> higher is better) in bold."""
    shown = _merged(frame)
    best = best_rows(frame, higher)
    lines = ["| " + " | ".join(shown) + " |", "|" + "|".join("---" for _ in shown) + "|"]
    for i in range(frame.height):
        cells = []
        for c in shown:
            text = _mean_sd(frame, c, i, " ± ") if c in higher else cell(frame[c][i])
            text = text.replace("|", "\\|")
            cells.append(f"**{text}**" if i in best.get(c, set()) and text else text)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "±": r"$\pm$",
}


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped (and newlines as spaces)."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text.replace("\n", " "))


def latex_table(
    frame: pl.DataFrame,
    caption: str | None = None,
    higher: Mapping[str, bool] | None = None,
) -> str:
    r"""A booktabs ``table`` of ``frame`` for a paper: numbers right-aligned, each ``<col>
    sd`` companion folded into ``<col>`` as ``mean $\pm$ sd``, the best value of each column
    of ``higher`` (column -> higher is better) in bold, ``caption`` escaped."""
    higher = higher or {}
    shown = _merged(frame)
    best = best_rows(frame, higher)
    align = "".join("r" if frame.schema[c].is_numeric() else "l" for c in shown)
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        rf"\begin{{tabular}}{{{align}}}",
        r"\toprule",
        " & ".join(latex_escape(c) for c in shown) + r" \\",
        r"\midrule",
    ]
    for i in range(frame.height):
        cells = []
        for c in shown:
            if c in higher:
                text = latex_escape(_mean_sd(frame, c, i, " ± "))
            else:
                text = latex_escape(cell(frame[c][i]))
            cells.append(rf"\textbf{{{text}}}" if i in best.get(c, set()) else text)
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    if caption:
        lines.append(rf"\caption{{{latex_escape(caption)}}}")
    lines.append(r"\end{table}")
    return "\n".join(lines)
