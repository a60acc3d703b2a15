"""``evalstore eval`` without polars, NumPy or pyarrow: values already cached, or computed by
their SQL alone, read with DuckDB and printed from Python rows (issue 32: a cached value
within 0.3 CPU seconds; the first AP of a new file without the heavy libraries' imports).

:func:`light_rows` applies the rules of :func:`evalstore.analysis.evaluate.evaluate` (the
same plan, cache key and staleness test, :mod:`evalstore.analysis.eval_plan`), computes what
is missing or stale through :func:`evalstore.analysis.eval_store.store_values` as it does,
and :func:`print_rows` prints what the full path would print, byte for byte, in every
``--format``. Where a value needs more than its SQL (what is made on first use: detection
lists and matches, keypoint estimates; a user's metric), or the call is one it does not
serve (an error included), it does nothing and the command takes the full path.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from evalstore import render
from evalstore.analysis.eval_plan import (
    RESULT_COLUMNS,
    Plan,
    param_sets,
    pending_runs,
    plan,
    sweep_values,
)
from evalstore.analysis.eval_store import computes_alone, store_values
from evalstore.cli.common import Fmt, emit_rows
from evalstore.db import queries
from evalstore.db.connection import Database, Progress
from evalstore.errors import EvalstoreError
from evalstore.metrics.catalogue import CATALOGUE, Metric

__all__ = ["csv_float", "light_rows", "parse_sweeps", "print_rows"]

#: the columns of ``evalstore eval``'s table
TABLE_COLUMNS = [
    "run", "task", "metric", "protocol", "slice", "value", "n_lists", "n_skipped", "params",
    "stale",
]  # fmt: skip
#: the numeric columns of the result frame (right-aligned in tables and LaTeX)
NUMERIC = frozenset({"run_id", "value", "n_lists", "n_skipped"})


def parse_sweeps(**given: str | None) -> dict[str, list[float]]:
    """``--sigma 1,2`` and the like as lists of numbers (the options not given left out).

    Raises:
        EvalstoreError: a value that is not a comma-separated list of numbers.
    """
    out = {}
    for name, text in given.items():
        if text is None:
            continue
        try:
            out[name] = [float(v) for v in text.split(",") if v.strip()]
        except ValueError:
            raise EvalstoreError(
                f"--{name} {text!r} is not a comma-separated list of numbers"
            ) from None
    return out


def _table() -> Mapping[str, Metric]:
    """The metrics ``-m`` names: the registry's where it is loaded (users' metrics are
    registered there, by ``--metrics-dir``), else the catalogue of the built-in ones."""
    registry = sys.modules.get("evalstore.metrics.registry")
    return CATALOGUE if registry is None else registry.METRICS


@dataclass(frozen=True)
class _Step:
    """One step of the plan: its values' parameter sets and the runs to compute."""

    task: str
    metric: Metric
    ids: list[int]
    at: list[float]
    sets: list[str]
    todo: list[int]


def _steps(
    store: Database,
    runs: Sequence[str] | None,
    *,
    metrics: Sequence[str] | None,
    ties: str | None,
    k: int | None,
    all_runs: bool,
    sweeps: Mapping[str, Sequence[float]],
    protocol: str | None,
    recompute: bool,
) -> tuple[Plan, list[_Step]] | None:
    """The plan of ``evaluate`` for a call without ``--by`` or another engine, each step with
    the runs whose values are missing or stale (all of them with ``recompute``); None where a
    step needs more than its SQL (what is made on first use, a user's metric) or no run is
    named. Nothing is computed or written."""
    chosen = plan(
        store,
        runs,
        table=_table(),
        metrics=metrics,
        ties=ties,
        k=k,
        by=(),
        all_runs=all_runs,
        protocol=protocol,
    )
    if chosen is None or chosen.stepped:  # runs with steps: the full path (step_runs)
        return None
    steps = []
    for task, metric, ids in chosen.steps:
        at = sweep_values(metric, sweeps, chosen.protocol)
        sets = param_sets(metric, chosen, at)
        todo = pending_runs(store, task, metric, ids, sets, recompute=recompute)
        if todo and not computes_alone(metric, task):
            return None
        steps.append(_Step(task, metric, ids, at, sets, todo))
    return chosen, steps


def _rows(store: Database, step: _Step) -> list[dict[str, Any]]:
    """The rows (:data:`RESULT_COLUMNS`) ``evaluate`` reads back for one step (no slices)."""
    stored = queries.fetch_rows(
        store.con, "eval/results", {"runs": step.ids, "metrics": [step.metric.name]}
    )
    sha = step.metric.sha
    out = []
    for params in step.sets:
        protocol_name = json.loads(params).get("protocol", "default")
        for row in stored:
            # run, run_id, experiment, task, metric, label, slice, value, n_lists,
            # n_skipped, params, definition_sha, computed_at, engine
            if row[3] != step.task or row[10] != params or row[6] != "":
                continue
            values = (*row[:3], step.task, row[5], *row[6:11], protocol_name, row[11], row[13])
            shown = dict(zip(RESULT_COLUMNS[:-1], values, strict=True))
            out.append({**shown, "stale": row[11] != sha})
    return out


def light_rows(
    *,
    runs: Sequence[str] | None,
    metrics: Sequence[str] | None,
    ties: str | None,
    k: int | None,
    all_runs: bool,
    sweeps: Mapping[str, str | None],
    protocol: str | None,
    db: Path | None,
    lock_timeout: float,
    recompute: bool = False,
    progress: Progress | None = None,
) -> list[dict[str, Any]] | None:
    """Evaluate as ``evaluate`` would: where every value is cached and current (unless
    ``recompute``) or computed by its SQL alone
    (:func:`~evalstore.analysis.eval_store.computes_alone`), compute what is missing or stale
    and return the rows ``evaluate`` returns (:data:`RESULT_COLUMNS`, for
    :func:`print_rows`); None (nothing computed) where the call needs the full path: a
    metric that reads what is made on first use, a user's metric, or an error in the call
    (the full path reports it, after what it does first). An error opening the store, or
    computing, is raised: the full path would raise the same."""
    try:
        given = parse_sweeps(**sweeps)
    except EvalstoreError:
        return None
    with Database(db, lock_timeout=lock_timeout, create=False, migrate=False) as store:
        try:
            found = _steps(
                store,
                runs,
                metrics=metrics,
                ties=ties,
                k=k,
                all_runs=all_runs,
                sweeps=given,
                protocol=protocol,
                recompute=recompute,
            )
        except EvalstoreError:
            return None
        if found is None:
            return None
        chosen, steps = found
        for i, step in enumerate(steps):
            if step.todo:
                store_values(
                    store,
                    step.metric,
                    step.task,
                    step.todo,
                    ties=chosen.ties,
                    k=chosen.k_for(step.metric),
                    at=step.at,
                    protocol=chosen.protocol,
                )
            if progress is not None:
                progress(f"{step.metric.name} {step.task}", i + 1, len(steps))
        return [row for step in steps for row in _rows(store, step)]


def print_rows(rows: list[dict[str, Any]], fmt: Fmt) -> None:
    """``rows`` as ``evalstore eval`` prints its frame (``_results_table``)."""
    if fmt is Fmt.json:
        shown = [{**r, "params": json.loads(r["params"]), "stale": bool(r["stale"])} for r in rows]
        typer.echo(json.dumps(render.jsonable(shown), indent=2))
        return
    columns = TABLE_COLUMNS if fmt is Fmt.table else RESULT_COLUMNS
    if fmt is Fmt.latex:
        typer.echo(_latex(columns, rows))
        return
    plain = [[r[c] for c in columns] for r in rows]
    if fmt in (Fmt.csv, Fmt.tsv):  # floats as polars writes them; the rest as rows_to_text
        plain = [[csv_float(v) if isinstance(v, float) else v for v in r] for r in plain]
    emit_rows(columns, plain, fmt, [c in NUMERIC for c in columns])


_EXP_05 = re.compile(r"(-?)(\d)(?:\.(\d+))?e-05")
_EXP_0X = re.compile(r"e-0(\d)$")


def csv_float(value: float) -> str:
    """A float as polars' CSV writer writes it: Python's shortest repr, but ``NaN``, an
    exponent of -5 written out (``0.00001``) and -6 to -9 without a leading zero
    (``1.5e-7``)."""
    if value != value:
        return "NaN"
    text = repr(value)
    five = _EXP_05.fullmatch(text)
    if five:
        return f"{five[1]}0.0000{five[2]}{five[3] or ''}"
    return _EXP_0X.sub(r"e-\1", text)


def _latex(columns: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> str:
    """:func:`evalstore.render.latex_table` of the rows, with the caption ``evalstore eval``
    gives it (the values' protocols)."""
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        rf"\begin{{tabular}}{{{''.join('r' if c in NUMERIC else 'l' for c in columns)}}}",
        r"\toprule",
        " & ".join(render.latex_escape(c) for c in columns) + r" \\",
        r"\midrule",
    ]
    for r in rows:
        lines.append(" & ".join(render.latex_escape(render.cell(r[c])) for c in columns) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    if rows:
        names = sorted({str(r["protocol"]) for r in rows})
        shown = ", ".join("evalstore default" if p == "default" else p for p in names)
        lines.append(rf"\caption{{{render.latex_escape(f'Protocol: {shown}.')}}}")
    lines.append(r"\end{table}")
    return "\n".join(lines)
