"""The one macro of evalstore's SQL: ``sum_exact(x)``, the exact sum of doubles.

Floating-point addition is not associative: a ``sum`` whose terms DuckDB (or Spark) adds in an
order that depends on its threads moves by an ULP between runs. Metric SQL therefore adds
its doubles in fixed point, and writes that as ``sum_exact(x)``, which
:func:`evalstore.db.queries.load` expands when it reads a query, so that what runs, what is
hashed and what transpiles is plain SQL:

    sum_exact(x)              cast(sum(cast((x) * pow(2, 90) as decimal(38, 0))) as double)
                                * pow(2, -90)
    sum_exact(x, 80)          the same at 2^80 (terms beyond [-1, 1], such as logs)
    sum_exact(x) over (...)   the window form: ``over (...)`` inside the outer cast

Each term is scaled by 2^bits and rounded to an integer (exact for a term of magnitude at
least 2^(52 - bits), 2^-38 at 90 bits; a smaller one is rounded to a multiple of 2^-bits), and
the integers add exactly as ``decimal(38, 0)``: the same bits in any order of the terms and on
any number of threads (docs/metrics.md, "Determinism"). The caller keeps the sum of the scaled
terms below 10^38 (about 2^126), as each metric's header says.
"""

from __future__ import annotations

import itertools
import re

from evalstore.errors import EvalstoreError

__all__ = ["EXACT_BITS", "expand_sum_exact"]

# what sum_exact's scan steps over whole (a string, a quoted name, a comment), or a bracket
_SKIP = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/|[(),]", re.S)
_SUM_EXACT = re.compile(r"\bsum_exact\s*\Z")
_OVER = re.compile(r"\s*over\s*\(", re.I)
#: the default scale of sum_exact, 2^90: a sum of up to 2^36 terms in [0, 1] stays below 10^38
EXACT_BITS = 90


def _closing(text: str, start: int, what: str) -> tuple[int, list[int]]:
    """The index of the bracket closing the one before ``start``, and the top-level commas
    between them; strings, quoted names and comments are stepped over whole."""
    depth, commas = 1, list[int]()
    for m in _SKIP.finditer(text, start):
        token = m.group(0)
        if token == "(":
            depth += 1
        elif token == ")":
            depth -= 1
            if depth == 0:
                return m.start(), commas
        elif token == "," and depth == 1:
            commas.append(m.start())
    raise EvalstoreError(f"{what}: sum_exact( has no closing bracket")


def expand_sum_exact(text: str, what: str = "SQL") -> str:
    """``text`` with each ``sum_exact(x)`` (``sum_exact(x, bits)``, optionally followed by a
    window ``over (...)``) replaced by the exact sum of the doubles ``x``: each term scaled
    by ``2^bits`` (default :data:`EXACT_BITS`), rounded to an integer and added as
    ``decimal(38, 0)``, the same bits in any order of the terms and on any number of threads,
    then scaled back to a double (docs/metrics.md, "Determinism"). Comments and strings are
    left alone.

    >>> expand_sum_exact("sum_exact(a / n)")
    'cast(sum(cast((a / n) * pow(2, 90) as decimal(38, 0))) as double) * pow(2, -90)'
    >>> expand_sum_exact("sum_exact(x, 80) over (w)")
    'cast(sum(cast(x * pow(2, 80) as decimal(38, 0))) over (w) as double) * pow(2, -80)'

    Raises:
        EvalstoreError: an unclosed bracket, or a second argument that is not a whole
            number of bits (naming ``what``).
    """
    out, pos = [], 0
    for m in _SKIP.finditer(text) if "sum_exact" in text else ():
        if m.start() < pos or m.group(0) != "(":
            continue
        head = _SUM_EXACT.search(text, max(pos, m.start() - 64), m.start())
        if head is None:
            continue
        end, commas = _closing(text, m.end(), what)
        cuts = [m.end(), *[c + 1 for c in commas], end + 1]
        args = [text[a : b - 1].strip() for a, b in itertools.pairwise(cuts)]
        bits = args[1] if len(args) == 2 else str(EXACT_BITS)
        if len(args) > 2 or not bits.isdigit() or not args[0]:
            raise EvalstoreError(
                f"{what}: sum_exact takes (expression) or (expression, bits), "
                f"got sum_exact({text[m.end() : end]})"
            )
        term = expand_sum_exact(args[0], what)
        term = term if re.fullmatch(r"[\w.]+", term) else f"({term})"
        window = ""
        over = _OVER.match(text, end + 1)
        if over is not None:
            close, _ = _closing(text, over.end(), what)
            window, end = " " + text[end + 1 : close + 1].strip(), close
        out += [
            text[pos : head.start()],
            f"cast(sum(cast({term} * pow(2, {bits}) as decimal(38, 0))){window} as double)"
            f" * pow(2, -{bits})",
        ]
        pos = end + 1
    return "".join(out) + text[pos:]
