"""Scores are stored as float64 (or float32 where every input gives float32): a score whose
value that type does not hold is refused rather than rounded, since rounding can make distinct
scores equal and so add ties (an AP of 0.333 where the ranking's is 0.5).

A float column holds its values exactly as they are. What may not fit is an integer column
(int64 beyond 2^53 skips whole numbers: 2^53 + 1 reads as 2^53), a decimal column, and the
text of a CSV or TSV file. The rule for text (and decimals, read as their text): a score is
the value of the float64 it reads as, to as many significant digits as it gives. Rounding that
float64 back to the text's number of digits gives the text again: ``0.1``, ``0.5``, ``1e-3``,
every float printed by its shortest representation (what polars, pandas and Python write) or
with 17 or more digits (``%.17g``, NumPy's ``savetxt``), and integers up to 2^53 pass;
``9007199254740993`` (2^53 + 1), ``0.30000000000000000001`` and ``1e-400`` (which reads as 0)
do not. Two accepted scores that read as one float64 are two printings of that same float.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal, InvalidOperation

import polars as pl

from evalstore.errors import InvalidInput

__all__ = [
    "INEXACT",
    "first_row",
    "inexact_integers",
    "inexact_text",
    "round_trips",
    "score_values",
]

#: the end of the message that refuses such a score (after the file, row and value)
INEXACT = (
    "is not exactly a float64, the type of stored scores: rounded, distinct scores could "
    "become ties; write floats as they print (shortest or 17 digits) and integers up to "
    "2^53 = 9,007,199,254,740,992"
)

_SMALLEST_NORMAL = 2.2250738585072014e-308  # below it a float64 has fewer digits
_DIGITS_ALWAYS_EXACT = 15  # any decimal of up to 15 significant digits survives float64
_NUMBER = r"^([+-]?)([0-9]*)\.?([0-9]*)(?:[eE]([+-]?[0-9]+))?$"


def first_row(mask: pl.Series) -> int:
    """The index of the first true value of ``mask``."""
    return int(mask.arg_true()[0])


def inexact_integers(values: pl.Series) -> pl.Series:
    """The rows of an integer column whose value is not exactly a float64 (null: not one)."""
    back = values.cast(pl.Float64).cast(values.dtype, strict=False)  # null: out of range
    return back.ne_missing(values) & values.is_not_null()


def _normal_form(text: pl.Expr) -> list[pl.Expr]:
    """A decimal number's text as (sign, significant digits, exponent of their last digit),
    zeros at either end stripped: ``"0.0250"`` -> ("", "25", -3). Null for text that is not a
    plain decimal number (``inf``, ``nan``)."""
    parts = text.str.extract_groups(_NUMBER).struct
    sign, whole, frac, exp = (parts.field(str(i)) for i in (1, 2, 3, 4))
    digits = (whole + frac).str.strip_chars_start("0")
    stripped = digits.str.strip_chars_end("0")
    exponent = (
        exp.fill_null("0").cast(pl.Int64, strict=False)
        - frac.str.len_chars().cast(pl.Int64)
        + (digits.str.len_chars() - stripped.str.len_chars()).cast(pl.Int64)
    )
    return [sign.fill_null("").alias("sign"), stripped.alias("digits"), exponent.alias("exponent")]


def inexact_text(text: pl.Series, parsed: pl.Series) -> pl.Series:
    """The rows of a text score column (stripped) whose number is not exactly the float64
    ``parsed`` holds for it, to the text's own number of significant digits (the module's
    rule). Checked in bulk where that is quick to prove (up to 15 significant digits, or the
    text is the float's shortest representation), and one by one otherwise, by printing the
    float to the text's number of digits (``%.17g``, ``%.18e``, and the rows refused: about
    3-5 CPU-s a million rows, against 0.2 for shortest text)."""
    frame = pl.DataFrame({"text": text, "value": parsed.cast(pl.Float64)}).with_row_index("row")
    value, raw = pl.col("value"), pl.col("text")
    quick = (
        value.is_null()  # not a number: inf, nan, a typo (refused by the caller's check)
        | (raw.str.len_bytes() <= _DIGITS_ALWAYS_EXACT)  # so at most as many digits
        & value.is_finite()
        & (value.abs() >= _SMALLEST_NORMAL)
    )
    shortest = value.cast(pl.String)  # as polars writes it: 1.0 for 1, 1e+20, 1e-10
    # the rows left, then of those the ones not printed shortest (printing only those)
    rest = frame.filter(~quick.fill_null(False))
    rest = rest.filter(~((raw == shortest) | (raw + ".0" == shortest)).fill_null(False))
    bad = [False] * frame.height
    if rest.height:  # one by one: the float printed to the text's number of digits
        rest = rest.with_columns(_normal_form(pl.col("text")))
        for row, text_, number, sign_, digits_, exponent_ in rest.iter_rows():
            bad[row] = not (
                _printed(number, sign_, digits_, exponent_)
                if digits_ and exponent_ is not None and math.isfinite(number)
                else round_trips(text_, number)
            )
    return pl.Series("inexact", bad, dtype=pl.Boolean)


def _printed(value: float, sign: str, digits: str, exponent: int) -> bool:
    """Whether ``value`` printed to ``len(digits)`` significant digits is the number of
    those digits (zeros at either end stripped) times 10^``exponent``: the module's rule,
    by the float's own formatting (five times quicker than :mod:`decimal` a row; ``%.18e``
    text is the common case)."""
    n = len(digits)
    mantissa, _, power = format(value, f".{n - 1}e").partition("e")
    return (
        mantissa.lstrip("-").replace(".", "") == digits
        and int(power) - (n - 1) == exponent
        and (sign == "-") == (value < 0)
    )


def round_trips(text: str, value: float) -> bool:
    """Whether ``value`` rounded to the significant digits of ``text`` gives its number."""
    try:
        given = Decimal(text)
    except InvalidOperation:
        return True  # not a number: refused by the caller's own check
    if not given.is_finite():
        return True
    if given.is_zero():
        return value == 0
    if value != value or value in (float("inf"), float("-inf")):
        return False
    n = len(given.normalize().as_tuple().digits)
    return Decimal(format(value, f".{n - 1}e")) == given


def score_values(score: pl.Series, label: str, where: Callable[[str, pl.Series], str]) -> pl.Series:
    """A score column as numbers (float64, or the float type it has): text parsed (``nan``,
    ``inf`` and ``-inf`` included, surrounding space ignored), decimals read through their
    text; a value that is not a number, or whose number a float64 does not hold exactly (the
    module's rule), refused.

    Raises:
        InvalidInput: naming the file, column 'score', the row and the value.
    """
    text = None
    if isinstance(score.dtype, pl.Decimal):
        score = score.cast(pl.String)  # checked, and parsed, as the digits it holds
    if score.dtype == pl.String:  # text files: "nan", "inf", "-inf" or a typo
        text = score.str.strip_chars()
        parsed = text.cast(pl.Float64, strict=False)
        bad = parsed.is_null() & score.is_not_null() & (text != "")
        if bad.any():
            raise InvalidInput(f"{where('score', bad)}: {score[first_row(bad)]!r} is not a number")
        inexact = inexact_text(text, parsed)
        score = parsed
    elif score.dtype.is_integer():
        inexact = inexact_integers(score)
    elif score.dtype.is_numeric() or score.dtype == pl.Null:
        return score
    else:
        raise InvalidInput(f"{label}: column 'score' must be numeric, found {score.dtype}")
    if inexact.any():
        row = first_row(inexact)
        raise InvalidInput(
            f"{where('score', inexact)}: {str(score[row]) if text is None else text[row]} "
            + INEXACT
        )
    return score
