"""Ingest of ranked lists (scores and labels) into a run: the entry point.

Parquet files with integer ids are read by DuckDB straight into the store and checked in one
pass afterwards (:mod:`evalstore.ingest.direct`); any other input, and any input the direct
path refuses, is read with polars in bounded batches and validated column by column
(:mod:`evalstore.ingest.stream`, which reports what is wrong with its file, column and row).
Either way a run is written in one transaction (:mod:`evalstore.ingest.write`): it is fully
there or not at all, whatever goes wrong (bad input, a crash, ``kill -9``).
"""

from __future__ import annotations

import contextlib
import difflib
import os
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from evalstore.errors import InvalidInput, option
from evalstore.ingest.direct import Recheck, insert_direct, plan_direct
from evalstore.ingest.formats.trec import read_trec
from evalstore.ingest.formats.voc import read_classification
from evalstore.ingest.lists import read_groups
from evalstore.ingest.sources import (
    COLUMNS,
    Source,
    as_sources,
    open_source,
    parse_columns,
    source_columns,
)
from evalstore.ingest.stream import insert_stream
from evalstore.ingest.validate import (
    LABEL_CONVENTIONS,
    TASKS,
    Spec,
    decide_storage,
    score_warnings,
)
from evalstore.ingest.write import IngestResult, Target, write_run
from evalstore.runs.meta import RunMeta, run_meta

if TYPE_CHECKING:
    from evalstore.db.connection import Database, Progress

__all__ = ["ingest", "ingest_streamed"]


def ingest(
    store: Database,
    data: Source | Sequence[Source],
    *,
    task: str,
    meta: RunMeta | None = None,
    fmt: str | None = None,
    columns: Sequence[str] | Mapping[str, str] | None = None,
    negate_score: bool = False,
    labels: str | None = None,
    groups: Source | None = None,
    groups_format: str | None = None,
    voc_gt: str | os.PathLike[str] | None = None,
    qrels: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
    run: str | None = None,
    experiment: str | None = None,
    replace: bool = False,
    append: bool = False,
    params: Sequence[str] | Mapping[str, Any] | None = None,
    tags: Sequence[str] = (),
    notes: str | None = None,
    created_at: str | datetime | None = None,
    git_commit: str | bool | None = True,
    keep_tags: bool = True,
) -> IngestResult:
    """Ingest ranked lists into a run, all or nothing.

    Args:
        store: an open, writable :class:`~evalstore.Store`.
        data: one source or several (their rows are concatenated in the given order): a path
            (Parquet, CSV, TSV, NDJSON, ``.npz``), a polars or pandas frame, a pyarrow Table or
            a dict of 1-D arrays. Columns ``group_id`` (optional for verification),
            ``item_id``, ``score``, ``label``.
        task: ``verification``, ``matching``, ``retrieval`` or ``classification`` (keypoint
            matches and counted outcomes have entry points of their own:
            :func:`evalstore.ingest.ingest_keypoints`, :func:`evalstore.ingest.ingest_outcomes`).
        meta: the run's name and metadata (:class:`~evalstore.runs.meta.RunMeta`), and
            whether it replaces a run of that name or adds this task to it.
        fmt: file format, overriding the extension; ``voc`` reads PASCAL VOC classification
            result files (``comp1_cls_test_<class>.txt``) with ground truth from ``voc_gt``.
        columns: ``{"score": "distance"}`` or ``["score=distance"]``: where our columns are.
        negate_score: store ``-score`` (for distances: smaller = better).
        labels: ``pm1`` (+1 positive, -1 negative, 0 ignored), ``01`` (1 = positive, 0 =
            negative) or ``bool``. The default (None) is ``pm1``, checked: an ingest whose
            labels, all inputs together, hold a 0 but no -1 is refused (0/1 labels, most
            likely); ``labels="pm1"`` given explicitly accepts it.
        groups: per-list metadata (``group_id``, optional ``n_positives``, slice columns).
        voc_gt: with ``fmt="voc"``, the folder of ``<class>_<set>.txt`` ground-truth files.
        qrels: with ``fmt="trec"`` (a TREC run file, ``qid Q0 docno rank score tag``), its
            relevance judgements (``qid iter docno grade``): the grades become gains, and
            judged documents the run lacks are not retrieved
            (:mod:`evalstore.ingest.formats.trec`).
        progress: called with (stage, rows done, total or None).
        run, experiment, replace, append, params, tags, notes, created_at, git_commit,
            keep_tags: kept for compatibility: the fields of ``meta``, given instead of it
            (never with it).

    Returns:
        An :class:`IngestResult`, with the label counts and any warnings (a score column
        named like a distance without ``negate_score``).

    Raises:
        InvalidInput: bad data or options, or 0 labels without any -1 under the default
            convention; nothing is written.
        RunExists: the run exists and neither ``meta.replace`` nor ``meta.append``.
        TypeError: ``meta`` and one of the keywords kept for compatibility.
    """
    if task in ("keypoints", "outcomes"):
        raise InvalidInput(
            f"task {task} is not a ranked list: use Store.ingest_{task}() "
            f"(evalstore.ingest.ingest_{task})"
        )
    if task not in TASKS:
        raise InvalidInput(
            f"unknown task {task!r}; {_did_you_mean(task, (*TASKS, 'keypoints', 'outcomes'))}"
            f"use one of {', '.join((*TASKS, 'keypoints', 'outcomes'))}"
        )
    if labels is not None and labels not in LABEL_CONVENTIONS:
        raise InvalidInput(
            f"unknown {option('labels', labels)}; use one of {', '.join(LABEL_CONVENTIONS)}"
        )
    meta = run_meta(meta, run=run, experiment=experiment, params=params, tags=tags, notes=notes,
                    created_at=created_at, git_commit=git_commit, replace=replace,
                    append=append, keep_tags=keep_tags)  # fmt: skip
    return _ranked(store, data, task=task, meta=meta, fmt=fmt, columns=columns,
                   negate_score=negate_score, labels=labels, groups=groups,
                   groups_format=groups_format, voc_gt=voc_gt, qrels=qrels, progress=progress,
                   direct=True)  # fmt: skip


def ingest_streamed(
    store: Database,
    data: Sequence[Source],
    *,
    task: str,
    meta: RunMeta,
    columns: Sequence[str] | Mapping[str, str] | None,
    negate_score: bool,
    labels: str | None,
    progress: Progress | None,
) -> IngestResult:
    """:func:`ingest` of files the direct path refused (:class:`~evalstore.ingest.direct.Recheck`)
    on the connection ``store`` holds, whose transaction was rolled back: the streaming path
    alone, which reports the problem with its file, column and row (or ingests the files, as
    :func:`ingest` then does). The fallback of :mod:`evalstore.ingest.parquet_direct`."""
    return _ranked(store, data, task=task, meta=meta, fmt=None, columns=columns,
                   negate_score=negate_score, labels=labels, groups=None, groups_format=None,
                   voc_gt=None, qrels=None, progress=progress, direct=False)  # fmt: skip


def _ranked(
    store: Database,
    data: Source | Sequence[Source],
    *,
    task: str,
    meta: RunMeta,
    fmt: str | None,
    columns: Sequence[str] | Mapping[str, str] | None,
    negate_score: bool,
    labels: str | None,
    groups: Source | None,
    groups_format: str | None,
    voc_gt: str | os.PathLike[str] | None,
    qrels: str | os.PathLike[str] | None,
    progress: Progress | None,
    direct: bool,
) -> IngestResult:
    """:func:`ingest` once its arguments are checked (``direct``: the direct path is tried)."""
    known = (*COLUMNS, "gain")  # gain: relevance grades, optional (graded metrics)
    spec = Spec(task, parse_columns(columns, known), labels or "pm1", negate_score, labels is None)
    sources = as_sources(data)
    if not sources:
        raise InvalidInput("nothing to ingest: no input given")
    if fmt == "hpatches":
        raise InvalidInput(
            f"{option('fmt', 'hpatches')} computes three tasks from a descriptor folder: use "
            "Store.ingest_hpatches() (evalstore.ingest.ingest_hpatches)"
        )
    format_warnings: list[str] = []
    if fmt == "voc":
        if task != "classification":
            raise InvalidInput(f"{option('fmt', 'voc')} holds classification results, not {task}")
        if voc_gt is None:
            raise InvalidInput(
                f"{option('fmt', 'voc')} needs {option('voc_gt')} DIR (the folder of "
                "<class>_<set>.txt)"
            )
        frame, format_warnings = read_classification(sources, voc_gt)
        sources, fmt, spec.columns, spec.labels, spec.check_pm1 = (
            [frame],
            None,
            {},
            "pm1",
            False,  # the ground truth's own +1/-1/0 (0: difficult)
        )
    if fmt == "trec":
        if task != "retrieval":
            raise InvalidInput(f"{option('fmt', 'trec')} holds retrieval runs, not {task}")
        if qrels is None:
            raise InvalidInput(
                f"{option('fmt', 'trec')} needs {option('qrels')} FILE (qid iter docno grade)"
            )
        frame, format_warnings = read_trec(sources, qrels)
        sources, fmt, spec.columns, spec.labels, spec.check_pm1 = [frame], None, {}, "pm1", False
    elif qrels is not None:
        raise InvalidInput(f"{option('qrels')} goes with {option('fmt', 'trec')}")
    # the input columns (after --column) of the ids, text in CSV/TSV, never inferred as
    # numbers; and of the score, whose text says whether a float64 holds it exactly
    text = [c for c in source_columns(spec.columns, ("group_id", "item_id", "score")).values() if c]
    # an npz file's arrays that no column of ours comes from are never decompressed
    mapped = [*source_columns(spec.columns, known).values(), *spec.columns.values()]
    used = {c for c in mapped if c is not None}
    opened = [open_source(s, fmt, i, text, used) for i, s in enumerate(sources)]
    warnings = [*format_warnings, *score_warnings(spec, [source.label for source in opened])]
    gain = spec.source_column("gain")
    without = [source.label for source in opened if gain not in source.schema]
    if without and len(without) < len(opened):
        raise InvalidInput(
            f"{without[0]}: no column {gain!r}, which the other inputs have: give every input "
            "its gains or none"
        )
    spec.gains = not without
    group_frame = read_groups(groups, groups_format, task) if groups is not None else None
    target = Target(meta, meta.replace, meta.append, group_frame, groups)
    plan = None if spec.gains or not direct else plan_direct(store.con, opened, spec)
    result = None
    if plan is not None:
        with contextlib.suppress(Recheck):  # the streaming path finds the same and says where
            result = write_run(
                store,
                target,
                spec,
                lambda first: insert_direct(store.con, plan, spec, first, progress),
            )
    if result is None:
        decide_storage(spec, opened)
        result = write_run(
            store,
            target,
            spec,
            lambda first: insert_stream(store.con, opened, spec, first, progress),
        )
    result.warnings = warnings
    return result


def _did_you_mean(name: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(name.lower(), known, n=2, cutoff=0.6)
    return f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
