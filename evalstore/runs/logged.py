"""Logged values: scalars computed outside evalstore (a training loss, an accuracy), recorded
with ``evalstore log RUN METRIC VALUE [--step N]`` or :meth:`Store.log_metric`.

They live in their own table (``logged_values``, schema 15), never in ``metric_values``: a
logged value has no per-list values, no definition SHA and is never recomputed or stale, so
``eval`` never touches it and ``compare`` shows it without a test. ``metrics``, ``history``,
``leaderboard`` and the overview dashboard show it as task ``logged``, at its latest step.

Rules, checked before anything is written:

- the metric name is a plain identifier (letters, digits, ``_``; not starting with a digit),
  not a registered metric or the name of its mean (``ap``, ``map``, ``mAP``: the values would
  be mixed up), nor another logged name but for its case;
- the value is a finite number; the step an integer >= 0, or none;
- a metric of a run is logged either with steps or without (its latest value is then the
  one at the last step, or the one value);
- logging (run, metric, step) again replaces the value (the result says which it replaced).

Deleting a run deletes its logged values; an ingest with ``--replace`` makes a new run, so
the old run's logged values go with it. Exports (:mod:`evalstore.scale`) hold them in the
``logged_values`` table, and an import checks them by these rules.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import polars as pl

from evalstore.db import queries
from evalstore.errors import InvalidInput, option, spelled
from evalstore.metrics.registry import METRICS, get
from evalstore.runs.registry import RunRef, get_run

if TYPE_CHECKING:
    from evalstore.db.connection import Database

__all__ = [
    "LOGGED_TASK",
    "NO_TEST",
    "check_case",
    "check_name",
    "check_plain_name",
    "check_step",
    "check_value",
    "higher_is_better",
    "latest_values",
    "log_metric",
    "logged_history",
    "logged_names",
    "split_logged",
]

#: The task column of logged values wherever they are shown with computed ones.
LOGGED_TASK = "logged"
#: What ``compare`` and ``check`` say of a logged value instead of a test.
NO_TEST = "logged: no per-list statistics, no test"

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
#: Name parts (split on ``_``) of a metric where lower is better; any other is higher-better.
_LOWER_WORDS = frozenset(
    ("loss", "losses", "error", "errors", "err", "nll", "ppl", "perplexity", "mse", "mae",
     "rmse", "wer", "cer", "fpr", "eer", "latency", "time", "seconds", "ms", "regret", "cost")
)  # fmt: skip
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def higher_is_better(metric: str) -> bool:
    """The direction of a logged metric, from its name: lower is better when a part of it
    (split on ``_``) is a loss or an error (``loss``, ``error``, ``err``, ``nll``, ``ppl``,
    ``perplexity``, ``mse``, ``mae``, ``rmse``, ``wer``, ``cer``, ``fpr``, ``eer``,
    ``latency``, ``time``, ``seconds``, ``ms``, ``regret``, ``cost``), else higher is better.

    >>> higher_is_better("train_loss"), higher_is_better("val_acc")
    (False, True)
    """
    return not _LOWER_WORDS & set(metric.translate(_ASCII_LOWER).split("_"))


def log_metric(
    store: Database, run: RunRef, metric: str, value: Any, step: Any = None
) -> dict[str, Any]:
    """Record ``value`` of ``metric`` for ``run`` (at ``step``, or without a step), in one
    transaction; logging the same (run, metric, step) again replaces the value.

    Returns:
        run (``EXPERIMENT/NAME``), run_id, metric, step, value, and ``replaced``: the value it
        replaced, or None.

    Raises:
        InvalidInput: a metric name that is not a plain identifier or is a registered metric
            (or its mean's name), a value that is not a finite number, a step that is not an
            integer >= 0, or a step given (or left out) where the run logs the metric without
            (with) steps; nothing is written.
        RunNotFound: no such run.
    """
    metric = check_name(store, metric)
    number = check_value(metric, value)
    at = check_step(metric, step)
    info = get_run(store, run)
    ref = f"{info['experiment']}/{info['name']}"
    keys = {"run_id": info["run_id"], "metric": metric}
    n, n_steps, first, last = queries.fetch_rows(store.con, "store/logged_steps", keys)[0]
    if at is None and n_steps:
        raise InvalidInput(
            f"run {ref} logs {metric} with steps ({first}..{last}); give a step "
            f"({spelled('step=N', '--step N')})"
        )
    if at is not None and n and not n_steps:
        raise InvalidInput(
            f"run {ref} logged {metric} without a step; log it without {option('step')} to replace "
            "that value, or under another name with steps"
        )
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    with store.transaction() as con:
        found = queries.fetch_rows(con, "store/logged_value_at", {**keys, "step": at})
        queries.run(con, "store/delete_logged_value", {**keys, "step": at})
        queries.run(con, "store/insert_logged_value",
                    {**keys, "step": at, "value": number, "logged_at": now})  # fmt: skip
    return {
        "run": ref,
        "run_id": info["run_id"],
        "metric": metric,
        "step": at,
        "value": number,
        "replaced": float(found[0][0]) if found else None,
    }


def check_name(store: Database, metric: object) -> str:
    """``metric`` when it is a name a value may be logged under (module docstring): a plain
    identifier, not a registered metric or its mean's name, nor another logged name of the
    store but for its case.

    Raises:
        InvalidInput: naming the metric and what is wrong.
    """
    return check_case(check_plain_name(metric), logged_names(store))


def check_plain_name(metric: object) -> str:
    """``metric`` when it is a plain identifier and not a registered metric or its mean's
    name (the rules of :func:`check_name` that need no store).

    Raises:
        InvalidInput: naming the metric and what is wrong.
    """
    if not isinstance(metric, str) or not _NAME.match(metric):
        raise InvalidInput(
            f"logged metric name {metric!r} is not a plain identifier (letters, digits and _, "
            "not starting with a digit, at most 128 characters)"
        )
    try:
        registered = get(metric)
    except InvalidInput:
        registered = None
    if registered is not None:
        what = "a computed metric" if metric.lower() in METRICS else (
            f"the mean of the computed metric {registered.name}"
        )  # fmt: skip
        raise InvalidInput(
            f"{metric!r} is {what}; a logged value of that name would be mixed up with the "
            f"values computed from raw rows: log it under another name (e.g. {metric}_logged)"
        )
    return metric


def check_case(metric: str, names: Iterable[str]) -> str:
    """``metric`` unless one of the logged ``names`` differs from it only in case.

    Raises:
        InvalidInput: naming both spellings.
    """
    folded = metric.translate(_ASCII_LOWER)
    for other in names:
        if other != metric and other.translate(_ASCII_LOWER) == folded:
            raise InvalidInput(
                f"logged metric {metric!r} differs only in case from the logged metric "
                f"{other!r}; spell both the same way"
            )
    return metric


def check_value(metric: str, value: object) -> float:
    """``value`` of ``metric`` as a float, when it is a finite number (not a bool or text).

    Raises:
        InvalidInput: naming the value and the metric.
    """
    if isinstance(value, (bool, str, bytes)) or not hasattr(value, "__float__"):
        raise InvalidInput(f"value {value!r} of {metric} is not a number")
    number = float(value)
    if not math.isfinite(number):
        raise InvalidInput(f"value {value!r} of {metric} is not a finite number")
    return number


def check_step(metric: str, step: object) -> int | None:
    """``step`` as an int (or None), when it is an integer >= 0 (below 2^63).

    Raises:
        InvalidInput: naming the step and the metric.
    """
    if step is None:
        return None
    if isinstance(step, bool) or not hasattr(step, "__index__"):
        raise InvalidInput(f"step {step!r} of {metric} is not an integer")
    at = int(step.__index__())
    if not 0 <= at < 2**63:
        raise InvalidInput(f"step {at} of {metric} is not an integer >= 0 (below 2^63)")
    return at


def logged_names(store: Database) -> list[str]:
    """Every metric name logged in the store, in order."""
    return [str(m) for (m,) in queries.fetch_rows(store.con, "store/logged_names")]


def split_logged(
    store: Database, names: Sequence[str] | None
) -> tuple[list[str] | None, list[str] | None]:
    """Requested metric names as (those logged in the store, the others), each in order;
    ``None`` (no names asked for) gives ``(None, None)``: every logged and computed one."""
    if names is None or not names:
        return None, None
    known = set(logged_names(store))
    return [n for n in names if n in known], [n for n in names if n not in known]


def _params() -> pl.Expr:
    """What the ``params`` column says of a logged value: the step it is the value of
    (``{"step":99}``), or ``{}``."""
    text = pl.concat_str(pl.lit('{"step":'), pl.col("step").cast(pl.String), pl.lit("}"))
    return pl.when(pl.col("step").is_null()).then(pl.lit("{}")).otherwise(text)


def latest_values(
    store: Database, run_ids: Sequence[int] | None, metrics: Sequence[str] | None
) -> pl.DataFrame:
    """The latest logged value (at the last step, or the one without a step) of each logged
    metric of ``run_ids`` (None = every run) among ``metrics`` (None = all), as rows of
    :func:`evalstore.analysis.evaluate.stored_metrics`: task ``logged``, ``params`` with the step,
    slice ``""``, no lists (n_lists, n_skipped, definition_sha and protocol NULL), engine
    ``logged``, never stale. Also ``step`` and ``n_steps``."""
    given = {
        "runs": None if run_ids is None else list(run_ids),
        "metrics": None if metrics is None else list(metrics),
    }
    frame = store.query("store/logged_latest", given)
    return frame.with_columns(
        task=pl.lit(LOGGED_TASK),
        slice=pl.lit(""),
        n_lists=pl.lit(None, pl.Int64),
        n_skipped=pl.lit(None, pl.Int64),
        params=_params(),
        protocol=pl.lit(None, pl.String),
        definition_sha=pl.lit(None, pl.String),
        engine=pl.lit("logged"),
        stale=pl.lit(False),
    )


def logged_history(store: Database, metric: str, experiment: str | None = None) -> pl.DataFrame:
    """A logged metric over time (``created_at``) for the runs of an experiment (or all): each
    run's latest value (``params`` says its step) with the best so far in the metric's
    direction (:func:`higher_is_better`).

    Returns:
        the columns of :func:`evalstore.analysis.compare.history`: run, run_id, experiment,
        created_at, task (``logged``), metric, params, value, n_lists (NULL), best_so_far.

    Raises:
        InvalidInput: no run of the experiment has the metric.
    """
    frame = store.query("store/logged_history", {"metric": metric, "experiment": experiment})
    if frame.height == 0:
        raise InvalidInput(
            f"no run{' of ' + experiment if experiment else ''} has logged values of {metric}"
        )
    best = pl.col("value").cum_max() if higher_is_better(metric) else pl.col("value").cum_min()
    return frame.with_columns(
        task=pl.lit(LOGGED_TASK),
        params=_params(),
        n_lists=pl.lit(None, pl.Int64),
        best_so_far=best.over("experiment"),
    ).select(
        "run", "run_id", "experiment", "created_at", "task", "metric", "params", "value",
        "n_lists", "best_so_far",
    )  # fmt: skip
