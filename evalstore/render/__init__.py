"""Turning result frames into text: tables for a terminal of a given width (rich), JSON,
CSV, Markdown or a LaTeX (booktabs) table.

Nothing here prints; :mod:`evalstore.cli` decides where the text goes. The package, by job:
:mod:`~evalstore.render.cells` (a value as a cell's text or as JSON, mean ± sd, the best
rows), :mod:`~evalstore.render.formats` (the machine and paper formats),
:mod:`~evalstore.render.layout` (how a table fits a width: constant columns folded into a
caption, numbers whole, text cut, blocks of columns; pure),
:mod:`~evalstore.render.terminal` (rich tables, and the same written directly) and
:mod:`~evalstore.render.screen` (a command's tables and caption in a width); this module
re-exports their public API. Neither polars nor rich is imported with the package.
"""

from evalstore.render.cells import SD_SUFFIX, best_rows, cell, jsonable, mean_sd, merged
from evalstore.render.formats import (
    FORMATS,
    dicts_text,
    latex_escape,
    latex_table,
    markdown_table,
    rows_to_text,
    to_text,
)
from evalstore.render.screen import (
    Screen,
    frame_screen,
    rows_screen,
    rows_screen_text,
    screen_text,
)
from evalstore.render.terminal import fit, rich_table, rows_table, rows_text, table_text

__all__ = [
    "FORMATS",
    "SD_SUFFIX",
    "Screen",
    "best_rows",
    "cell",
    "dicts_text",
    "fit",
    "frame_screen",
    "jsonable",
    "latex_escape",
    "latex_table",
    "markdown_table",
    "mean_sd",
    "merged",
    "rich_table",
    "rows_screen",
    "rows_screen_text",
    "rows_table",
    "rows_text",
    "rows_to_text",
    "screen_text",
    "table_text",
    "to_text",
]
