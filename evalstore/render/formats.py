"""Result frames as text for files and other programs: JSON (a list of objects, or one object
a line), CSV, TSV, Markdown and a LaTeX (booktabs) table."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evalstore.render.cells import best_rows, cell, jsonable, mean_sd, merged

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "FORMATS",
    "dicts_text",
    "latex_escape",
    "latex_table",
    "markdown_table",
    "rows_to_text",
    "to_text",
]

FORMATS = ("table", "json", "csv", "md", "latex")


def to_text(frame: pl.DataFrame, fmt: str) -> str:
    """Render ``frame`` as ``json`` (a list of objects), ``nl`` (one JSON object a line),
    ``csv``, ``tsv`` or ``md``."""
    import polars as pl  # here, not at the top: `evalstore runs` prints tables without it

    if fmt in ("json", "nl", "md"):
        return dicts_text(frame.columns, frame.to_dicts(), fmt)
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
    raise ValueError(f"unknown format {fmt!r}")


def dicts_text(columns: Sequence[str], rows: Sequence[Mapping[str, Any]], fmt: str) -> str:
    """Rows (each a mapping of ``columns`` to values, as a frame's ``to_dicts()``) as
    ``json`` (a list of objects), ``nl`` (one JSON object a line) or ``md``."""
    if fmt == "json":
        return json.dumps([jsonable(r) for r in rows], indent=2, default=str)
    if fmt == "nl":  # one JSON object a line (newline-delimited JSON)
        return "\n".join(json.dumps(jsonable(r), default=str) for r in rows)
    if fmt == "md":
        header = "| " + " | ".join(columns) + " |"
        rule = "|" + "|".join("---" for _ in columns) + "|"
        body = [
            "| " + " | ".join(cell(r[c]).replace("|", "\\|") for c in columns) + " |" for r in rows
        ]
        return "\n".join([header, rule, *body])
    raise ValueError(f"unknown format {fmt!r}")


def rows_to_text(columns: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str) -> str:
    """:func:`to_text` of plain rows, without a frame: ``json``, ``nl`` and ``md`` of any
    values; ``csv`` and ``tsv`` (as polars writes them) of booleans, integers, text and
    nulls only."""
    if fmt not in ("csv", "tsv"):
        return dicts_text(columns, [dict(zip(columns, r, strict=True)) for r in rows], fmt)
    sep = "\t" if fmt == "tsv" else ","
    if any(type(v) not in _CSV_PLAIN for r in rows for v in r):
        raise ValueError("rows_to_text writes CSV of booleans, integers, text and nulls only")
    lines = [sep.join(_csv_field(c, sep) for c in columns)]
    lines += [sep.join(_csv_value(v, sep) for v in r) for r in rows]
    return ("\n".join(lines) + "\n").rstrip("\n")


_CSV_PLAIN = (bool, int, str, type(None))


def _csv_value(value: Any, sep: str) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return _csv_field(value, sep) if isinstance(value, str) else str(value)


def _csv_field(text: str, sep: str) -> str:
    """A text as polars' CSV writer quotes it: where empty or holding the separator, a quote
    or a line break."""
    if text == "" or sep in text or '"' in text or "\n" in text or "\r" in text:
        return '"' + text.replace('"', '""') + '"'
    return text


def _csv_type(dtype: pl.DataType) -> bool:
    import polars as pl

    return (
        dtype.is_numeric()
        or dtype.is_temporal()
        or isinstance(dtype, (pl.String, pl.Boolean, pl.Categorical, pl.Enum, pl.Null))
    )


def markdown_table(frame: pl.DataFrame, higher: Mapping[str, bool]) -> str:
    """A Markdown table with each ``<col> sd`` folded into ``<col>`` as mean ± sd and the
    best value of each column of ``higher`` (column -> higher is better) in bold."""
    shown = merged(frame)
    best = best_rows(frame, higher)
    lines = ["| " + " | ".join(shown) + " |", "|" + "|".join("---" for _ in shown) + "|"]
    for i in range(frame.height):
        cells = []
        for c in shown:
            text = mean_sd(frame, c, i, " ± ") if c in higher else cell(frame[c][i])
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
    shown = merged(frame)
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
                text = latex_escape(mean_sd(frame, c, i, " ± "))
            else:
                text = latex_escape(cell(frame[c][i]))
            cells.append(rf"\textbf{{{text}}}" if i in best.get(c, set()) else text)
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    if caption:
        lines.append(rf"\caption{{{latex_escape(caption)}}}")
    lines.append(r"\end{table}")
    return "\n".join(lines)
