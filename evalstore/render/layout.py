"""How a table fits a terminal's width (pure, no rich): which columns fold into a caption,
the width of each column shown, and where a table too wide for any squeeze splits into
blocks of columns.

The rules, in order:

1. a column whose value is the same on every row (of two rows or more) is not shown: it is
   said once in the caption (``task: retrieval · ties: grouped``); never a key column (the
   row's identity: ``run``, ``name``, ``group``..., else the first column), nor a result
   column (:data:`RESULTS`: ``value``, ``diff``, an interval's bounds, ``p_value``), nor a
   column the caller protects (the metric columns of a leaderboard);
2. numbers keep their full width: a right-aligned column never shrinks, never wraps;
3. text columns shrink, widest first, to :data:`SOFT_FLOOR` characters (their name, when
   longer) and are cut with an ellipsis; the key columns last;
4. when that is still too wide, the columns split into blocks printed one under another,
   each starting with the key columns;
5. inside a block too wide even so, text columns shrink to :data:`HARD_FLOOR` (or their
   name). Column names are always shown whole.
"""

from __future__ import annotations

import textwrap
import unicodedata
from collections.abc import Collection, Sequence
from dataclasses import dataclass

__all__ = [
    "ELLIPSIS",
    "HARD_FLOOR",
    "KEYS",
    "RESULTS",
    "SEPARATOR",
    "SOFT_FLOOR",
    "Plan",
    "clip",
    "plan",
    "text_width",
    "total_width",
]

#: The columns that name a row: never folded, repeated in every block.
KEYS = frozenset({"run", "run_id", "name", "group", "group_id", "item_id", "field"})
#: The columns that hold a result: shown even when every row's value is the same.
RESULTS = frozenset(
    {"value", "value_a", "value_b", "baseline_value", "diff", "ci_low", "ci_high", "p_value"}
)
SOFT_FLOOR = 20
HARD_FLOOR = 8
SEPARATOR = " · "
ELLIPSIS = "\u2026"


@dataclass(frozen=True)
class Plan:
    """A table's layout: ``blocks`` of (column index, width), printed one under another, and
    the ``caption`` lines that name the folded columns' values."""

    blocks: tuple[tuple[tuple[int, int], ...], ...]
    folded: tuple[int, ...]
    caption: tuple[str, ...]


def text_width(text: str) -> int:
    """The terminal cells ``text`` takes: its widest line, East Asian wide characters as two
    cells and combining marks as none."""
    return max((_line_width(line) for line in text.split("\n")), default=0)


def _line_width(line: str) -> int:
    if line.isascii():
        return len(line)
    return sum(
        0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
        for ch in line
    )


def clip(text: str, width: int) -> str:
    """Each line of ``text`` cut to ``width`` cells, ending in an ellipsis where it was cut
    (as rich's ``overflow="ellipsis"`` does)."""
    out = []
    for line in text.split("\n"):
        if _line_width(line) > width:
            while line and _line_width(line) > width - 1:
                line = line[:-1]
            line += ELLIPSIS
        out.append(line)
    return "\n".join(out)


def total_width(widths: Sequence[int]) -> int:
    """The width of a table of these column widths: a space of padding each side of each
    column, one between columns and an edge each side (rich's ``SIMPLE_HEAD``)."""
    return sum(widths) + 3 * len(widths) + 1


def plan(
    headers: Sequence[str],
    cells: Sequence[Sequence[str]],
    right: Sequence[bool],
    width: int,
    *,
    constant: Sequence[bool],
    protected: Collection[int] = (),
) -> Plan:
    """The layout of a table of ``headers`` and ``cells`` (one list of texts per column) in
    ``width`` cells. ``right``: the numeric columns (right-aligned, never shrunk);
    ``constant``: the columns whose value is the same on every row; ``protected``: columns
    never folded (with the keys and :data:`RESULTS`)."""
    n_rows = len(cells[0]) if cells else 0
    keys = [i for i, h in enumerate(headers) if h in KEYS] or [0]
    folded = tuple(
        i
        for i in range(len(headers))
        if n_rows >= 2
        and constant[i]
        and i not in keys
        and i not in protected
        and headers[i] not in RESULTS
    )
    shown = [i for i in range(len(headers)) if i not in folded]
    natural = {i: max([text_width(headers[i])] + [text_width(c) for c in cells[i]]) for i in shown}
    keys = [i for i in keys if i in shown]

    def floor(i: int, soft: int) -> int:
        if right[i]:
            return natural[i]
        return max(text_width(headers[i]), min(natural[i], soft))

    def squeeze(cols: Sequence[int], soft: int) -> dict[int, int] | None:
        """Widths of ``cols`` within ``width``: text shrunk to ``soft``, None if too wide."""
        widths = {i: natural[i] for i in cols}
        excess = total_width(list(widths.values())) - width
        for tier in ([i for i in cols if i not in keys], [i for i in cols if i in keys]):
            while excess > 0:
                room = {i: widths[i] - floor(i, soft) for i in tier if widths[i] > floor(i, soft)}
                if not room:
                    break
                widest = max(room, key=lambda i: (widths[i], -i))
                others = [widths[i] for i in room if i != widest]
                step = min(room[widest], excess, max(1, widths[widest] - max(others, default=0)))
                widths[widest] -= step
                excess -= step
        return widths if excess <= 0 else None

    blocks: list[list[int]] = []
    whole = squeeze(shown, SOFT_FLOOR)
    if whole is not None or len(shown) <= len(keys) + 1:
        blocks = [shown]
    else:
        current: list[int] = []
        for i in (i for i in shown if i not in keys):
            trial = sorted([*keys, *current, i])
            fits = total_width([floor(j, SOFT_FLOOR) for j in trial]) <= width
            if current and not fits:
                blocks.append(sorted([*keys, *current]))
                current = []
            current.append(i)
        blocks.append(sorted([*keys, *current]))
    laid = []
    for cols in blocks:
        widths = (
            squeeze(cols, SOFT_FLOOR)
            or squeeze(cols, HARD_FLOOR)
            or {i: floor(i, HARD_FLOOR) for i in cols}  # too narrow a terminal: lines overflow
        )
        laid.append(tuple((i, widths[i]) for i in cols))
    items = [f"{headers[i]}: {_one_line(cells[i][0]) or '(none)'}" for i in folded]
    return Plan(blocks=tuple(laid), folded=folded, caption=caption_lines(items, width))


def _one_line(text: str) -> str:
    return " ".join(text.split("\n"))


def caption_lines(items: Sequence[str], width: int) -> tuple[str, ...]:
    """``items`` joined by `` · `` in lines of at most ``width`` cells, each indented by one
    space (the table's edge); a line that ends between items ends with `` ·``, and an item
    longer than a line wraps at its spaces."""
    room = max(width - 3, 10)  # the indent, and room for a closing " ·"
    lines: list[str] = []
    line = ""
    for item in items:
        if line and text_width(line + SEPARATOR + item) <= room:
            line += SEPARATOR + item
            continue
        if line:
            lines.append(line + SEPARATOR.rstrip())
        parts = textwrap.wrap(item, room, break_on_hyphens=False) or [item]
        lines.extend(parts[:-1])
        line = parts[-1]
    if line:
        lines.append(line)
    return tuple(" " + line for line in lines)
