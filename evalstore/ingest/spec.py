"""What a ranked-list ingest is asked to do (:class:`Spec`), the tasks and label conventions,
and the checks of its labels and score column's name that need no rows: without polars, so
that the direct path (:mod:`evalstore.ingest.parquet_direct`) imports none."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from evalstore.db.schema import row_table
from evalstore.errors import InvalidInput, option

__all__ = [
    "INT32",
    "LABEL_CONVENTIONS",
    "MAX_ROWS",
    "TASKS",
    "Spec",
    "check_labels",
    "inputs_text",
    "score_warnings",
]

TASKS = ("verification", "matching", "retrieval", "classification")
LABEL_CONVENTIONS = ("pm1", "01", "bool")
INT32 = (-(1 << 31), (1 << 31) - 1)
MAX_ROWS = (1 << 31) - 1  # seq is an INTEGER: the input position within a run's task


@dataclass
class Spec:
    task: str
    columns: dict[str, str]
    labels: str
    negate_score: bool
    # pm1 by default, not chosen: an ingest with 0 labels but no -1 is refused (check_labels)
    check_pm1: bool = False
    float32: bool = False  # every input's score column is float32: stored as such (exact)
    int_groups: bool = False  # every input's group ids are integers
    int_items: bool = False  # every input's item ids are integers of int32 range: stored so
    gains: bool = False  # every input has a gain column (relevance grades): stored, and the
    # label, when no column gives it, is +1 where gain > 0 and -1 elsewhere

    def source_column(self, ours: str) -> str:
        return self.columns.get(ours, ours)

    @property
    def table(self) -> str:
        """The table this ingest writes its rows to."""
        return row_table(self.int_items, self.float32)


def inputs_text(labels: Sequence[str]) -> str:
    """The inputs of an ingest as a message names them: ``a.csv``, ``a.csv, b.csv``, or the
    first three and how many more."""
    shown = ", ".join(labels[:3])
    return shown if len(labels) <= 3 else f"{shown} and {len(labels) - 3} more"


def _rows(n: int) -> str:
    return f"{n:,} row{'' if n == 1 else 's'}"


def check_labels(
    spec: Spec, inputs: Sequence[str], positives: int, negatives: int, ignored: int
) -> None:
    """Refuse an ingest read under the default ``pm1`` convention (not chosen explicitly)
    whose labels, all inputs together, hold a 0 but no -1: 0/1 labels, most likely, whose
    every negative would be ignored (AP 1 for any ranking). An explicit ``labels="pm1"``
    accepts it (positives and ignored items only, as in retrieval without distractors).

    Raises:
        InvalidInput: naming the inputs, the label column, the counts and the fix.
    """
    if not spec.check_pm1 or negatives or not ignored:
        return
    has = f"0 ({_rows(ignored)})"
    has += f" and 1 ({_rows(positives)}) but no -1" if positives else " but no 1 or -1"
    raise InvalidInput(
        f"{inputs_text(inputs)}: column {spec.source_column('label')!r} has {has}; under "
        f"{option('labels', 'pm1')} every 0 is ignored (not a negative): pass "
        f"{option('labels', '01')} if 0 means negative, or {option('labels', 'pm1')} explicitly "
        "if 0 means ignored"
    )


# words of a score column's name that say "distance" (smaller = closer), and words that say
# it was negated already
_DISTANCE_WORDS = frozenset(
    {
        "d",
        "dist",
        "dists",
        "distance",
        "distances",
        "dissimilarity",
        "l1",
        "l2",
        "euclidean",
        "sqeuclidean",
        "manhattan",
        "hamming",
    }
)
_NEGATED_WORDS = frozenset({"neg", "negated", "negative", "minus"})


def _words(name: str) -> set[str]:
    """``descDistance`` -> {desc, distance}; ``l2_dist`` -> {l2, dist}."""
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name)
    return {w for w in re.split(r"[^0-9a-z]+", spaced.lower()) if w}


def score_warnings(spec: Spec, inputs: Sequence[str]) -> list[str]:
    """A warning when the score column's name (after the column mapping) has a word that
    says distance (``distance``, ``dist``, ``d``, ``l1``, ``l2``, ``hamming``, ...; words are
    split at non-alphanumerics and lower-to-upper case changes) and none that says it is
    negated already (``neg``, ``negated``, ``negative``, ``minus``), and ``negate_score`` is
    off: the scores are stored as given, higher = more confident.

    >>> spec = Spec("retrieval", {"score": "l2_dist"}, "pm1", negate_score=False)
    >>> len(score_warnings(spec, ["a.csv"]))
    1
    >>> score_warnings(Spec("retrieval", {"score": "neg_dist"}, "pm1", False), ["a.csv"])
    []
    """
    column = spec.source_column("score")
    words = _words(column)
    if spec.negate_score or not words & _DISTANCE_WORDS or words & _NEGATED_WORDS:
        return []
    return [
        f"{inputs_text(inputs)}: the score column {column!r} is named like a distance "
        "(smaller = closer) but --negate-score is not given: its values are stored as they "
        "are, higher = more confident; pass --negate-score if smaller is better"
    ]
