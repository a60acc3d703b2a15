"""Turning result frames into text: a rich table for terminals, JSON, CSV or Markdown.

Nothing here prints; :mod:`evalstore.cli` decides where the text goes.
"""

from __future__ import annotations

import io
import json
import math
from datetime import date, datetime
from typing import Any

import polars as pl
from rich import box
from rich.table import Table
from rich.text import Text

__all__ = ["FORMATS", "cell", "jsonable", "rich_table", "to_text"]

FORMATS = ("table", "json", "csv", "md")


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
    """Render ``frame`` as ``json`` (a list of objects), ``csv`` or ``md``."""
    rows = frame.to_dicts()
    if fmt == "json":
        return json.dumps([jsonable(r) for r in rows], indent=2, default=str)
    if fmt == "csv":
        flat = frame.with_columns(
            [
                pl.col(c).cast(pl.List(pl.String)).list.join(", ")
                if isinstance(t, (pl.List, pl.Array))
                else pl.col(c).struct.json_encode()
                for c, t in frame.schema.items()
                if t.is_nested()
            ]
        )
        buf = io.StringIO()
        flat.write_csv(buf)
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


def rich_table(frame: pl.DataFrame, title: str | None = None) -> Table:
    """A rich table of ``frame``; user strings are shown as text, never as markup."""
    table = Table(title=title, box=box.SIMPLE_HEAD, header_style="bold")
    for name, dtype in frame.schema.items():
        table.add_column(name, justify="right" if dtype.is_numeric() else "left", overflow="fold")
    for row in frame.iter_rows():
        table.add_row(*(Text(cell(v)) for v in row))
    return table
