"""TREC run files and relevance judgements (qrels), read as trec_eval reads them.

Run: one ``qid Q0 docno rank score tag`` per line (whitespace-separated); trec_eval ranks by
the score and ignores the rank column, and so does evalstore. Qrels: one ``qid iter docno rel``
per line, ``rel`` an integer grade >= 0 (usnistgov/trec_eval @ 0e041ae2, ``get_trec_results.c``
and ``get_qrels.c``).

Each query becomes one ranked list (``group_id`` = qid, ``item_id`` = docno):

- the run's documents, in file order, with their score and their grade from the qrels as
  ``gain``; a document without a judgement has grade 0 (non-relevant), as trec_eval counts an
  unjudged document;
- then the query's judged documents that the run does not hold, **not retrieved** (score
  -inf): trec_eval counts them in the number of relevant documents (recall, R-precision) and
  in nDCG's ideal ranking;
- the label follows from the grade: +1 where it is positive (trec_eval's relevance level 1).

A query of the run without judgements is left out, as trec_eval evaluates only judged queries
(one warning says how many). A query of the judgements that the run lacks becomes a list with
nothing retrieved: ``--protocol trec`` leaves it out of the means (trec_eval), ``trec-c``
counts it 0 (trec_eval -c). Rank with ``--protocol trec`` (or ``--ties docid``): trec_eval
breaks ties of equal scores by document id.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from evalstore.errors import InvalidInput, option
from evalstore.ingest.exact import INEXACT, inexact_text
from evalstore.ingest.formats.voc import split_fields
from evalstore.ingest.sources import Source

__all__ = ["read_trec"]


def _fields(path: Path, names: Sequence[str], what: str) -> pl.DataFrame:
    """The fields of every non-blank line (:func:`~evalstore.ingest.formats.voc.split_fields`);
    a file without rows, or a field with a control character, is refused."""
    fields = split_fields(path, names, f"{len(names)} fields ({what})")
    if fields.height == 0:
        raise InvalidInput(f"{path}: no rows")
    for name in names:  # a NUL or another control character: a damaged file, not an id
        control = fields[name].str.contains(r"[\x00-\x1f\x7f]")
        if control.any():
            i = int(control.arg_true()[0])
            raise InvalidInput(
                f"{path} line {fields['row'][i]}: field {name!r} holds a control character "
                f"({fields[name][i]!r})"
            )
    return fields


def _first_bad(frame: pl.DataFrame, bad: pl.Series, path: Path, message: str) -> None:
    if bad.any():
        i = int(bad.arg_true()[0])
        raise InvalidInput(
            f"{path} line {frame['row'][i]}: " + message.format(**frame.row(i, named=True))
        )


def _duplicates(frame: pl.DataFrame, path: Path) -> None:
    dup = frame.select(pl.struct("qid", "docno").is_duplicated()).to_series()
    if dup.any():
        i = int(dup.arg_true()[1])  # the second occurrence
        raise InvalidInput(
            f"{path} line {frame['row'][i]}: document {frame['docno'][i]!r} appears twice for "
            f"query {frame['qid'][i]!r}"
        )


def read_trec(
    runs: Sequence[Source], qrels: str | os.PathLike[str]
) -> tuple[pl.DataFrame, list[str]]:
    """Read a TREC run file and its qrels into one frame of ranked lists (see the module
    docstring).

    Returns:
        The frame (columns group_id, item_id, score, gain) and warnings (run queries left out).

    Raises:
        InvalidInput: not one run file, a malformed line, a score that is not a finite number,
            a grade that is not an integer >= 0, a document twice for one query.
    """
    if len(runs) != 1 or not isinstance(runs[0], (str, os.PathLike)):
        raise InvalidInput(
            f"{option('fmt', 'trec')} reads one run file (qid Q0 docno rank score tag)"
        )
    run_path, qrels_path = Path(runs[0]), Path(qrels)
    run = _fields(
        run_path, ("qid", "q0", "docno", "rank", "score", "tag"), "qid Q0 docno rank score tag"
    )
    score = run["score"].cast(pl.Float64, strict=False)
    _first_bad(
        run,
        score.is_null() | ~score.is_finite().fill_null(False),
        run_path,
        "score {score!r} is not a finite number",
    )
    inexact = inexact_text(run["score"].str.strip_chars(), score)
    _first_bad(run, inexact, run_path, "score {score!r} " + INEXACT)
    run = run.with_columns(score=score)
    _duplicates(run, run_path)
    judged = _fields(qrels_path, ("qid", "iter", "docno", "rel"), "qid iter docno rel")
    grade = judged["rel"].cast(pl.Int64, strict=False)
    _first_bad(
        judged,
        grade.is_null() | (grade < 0).fill_null(True),
        qrels_path,
        "grade {rel!r} is not an integer >= 0 (a relevance grade)",
    )
    judged = judged.with_columns(gain=grade.cast(pl.Float64))
    _duplicates(judged, qrels_path)
    queries = set(judged["qid"].to_list())
    unjudged = sorted(set(run["qid"].to_list()) - queries)
    warnings = []
    if unjudged:
        warnings.append(
            f"{run_path}: {len(unjudged)} quer{'y' if len(unjudged) == 1 else 'ies'} without "
            f"judgements left out, as trec_eval does (e.g. {unjudged[0]!r})"
        )
    retrieved = (
        run.filter(pl.col("qid").is_in(list(queries)))
        .join(
            judged.select("qid", "docno", "gain"),
            on=["qid", "docno"],
            how="left",
            maintain_order="left",
        )
        .select(
            pl.col("qid").alias("group_id"),
            pl.col("docno").alias("item_id"),
            pl.col("score"),
            pl.col("gain").fill_null(0.0),
        )
    )
    missing = judged.join(
        run.select("qid", "docno"), on=["qid", "docno"], how="anti", maintain_order="left"
    ).select(
        pl.col("qid").alias("group_id"),
        pl.col("docno").alias("item_id"),
        pl.lit(-math.inf).alias("score"),
        pl.col("gain"),
    )
    return pl.concat([retrieved, missing]), warnings
