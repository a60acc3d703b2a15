"""Evaluations at training steps: a step's per-sample rows stored as a run of their own.

``log_lists(store, "exp/name", frame, task="retrieval", step=1000)`` stores the rows of that
step through the ingest of ranked lists, into the *step run* ``exp/name@1000``: a run of the
parent's experiment with the parent's params, tags and git commit, linked to the parent by a
``run_steps`` row (``sql/schema/022_training_runs.sql``). Every metric, protocol, tie policy
and statistic so applies to a step as to any run, and ``evalstore eval exp/name@1000`` reaches
it by name. :func:`log_keypoints`, :func:`log_outcomes` and :func:`log_detections` do the same
for the other tasks.

One step run per (run, step): another task at the same step is added to it (as ``--append``
adds a task), the same task again is refused unless ``replace``. The step run, its rows and
its link are written in one transaction: the link is inserted inside the ingest's own
transaction, just before it commits, so a step run without its link is never seen. The same
transaction drops the values the parent mirrors from its last step
(:mod:`evalstore.analysis.step_runs`), which the next evaluation mirrors again.
"""

from __future__ import annotations

import contextlib
import json
import numbers
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from evalstore.db import queries
from evalstore.db.connection import Database
from evalstore.errors import InvalidInput, RunExists
from evalstore.ingest.detections import ingest_detections
from evalstore.ingest.formats.boxes import read_boxes
from evalstore.ingest.keypoints import ingest_keypoints
from evalstore.ingest.outcomes import ingest_outcomes
from evalstore.ingest.ranked import ingest
from evalstore.runs import registry as runs
from evalstore.runs.meta import RunMeta

if TYPE_CHECKING:
    from pathlib import Path

    from evalstore.ingest.sources import Source
    from evalstore.ingest.written import IngestResult
    from evalstore.runs.registry import RunRef

__all__ = [
    "RunSteps",
    "StoreSteps",
    "log_detections",
    "log_keypoints",
    "log_lists",
    "log_outcomes",
    "step_name",
]

R = TypeVar("R", bound="IngestResult")
Columns = Sequence[str] | Mapping[str, str] | None


def step_name(name: str, step: int) -> str:
    """The name of a run's step run: ``NAME@STEP``."""
    return f"{name}@{step}"


def log_lists(
    store: Database,
    run: RunRef,
    data: Source | Sequence[Source],
    *,
    task: str,
    step: int,
    replace: bool = False,
    fmt: str | None = None,
    columns: Columns = None,
    negate_score: bool = False,
    labels: str | None = None,
    groups: Source | None = None,
    groups_format: str | None = None,
    qrels: str | None = None,
) -> IngestResult:
    """Store ranked lists (``verification``, ``matching``, ``retrieval``, ``classification``)
    as the evaluation of ``run`` at training ``step``; the options as
    :func:`evalstore.ingest.ingest`'s.

    Raises:
        RunNotFound: no run ``run``.
        InvalidInput: ``step`` not a whole number >= 0; ``run`` is itself a step run; the
            rows, as the ingest checks them (nothing is written).
        RunExists: the step has ``task`` rows already and not ``replace``.
    """
    return _log(
        store, run, task, step, replace,
        lambda meta: ingest(store, data, task=task, meta=meta, fmt=fmt, columns=columns,
                            negate_score=negate_score, labels=labels, groups=groups,
                            groups_format=groups_format, qrels=qrels),
    )  # fmt: skip


def log_keypoints(
    store: Database,
    run: RunRef,
    data: Source | Sequence[Source],
    *,
    step: int,
    replace: bool = False,
    fmt: str | None = None,
    columns: Columns = None,
    pairs: Source | None = None,
    pairs_format: str | None = None,
    homography_dir: str | None = None,
    disparity_dir: str | None = None,
    disparity_scale: float | None = None,
    ransac_threshold: float = 3.0,
) -> IngestResult:
    """Store keypoint matches with their ground truth as the evaluation of ``run`` at
    ``step``; the options as :func:`evalstore.ingest.ingest_keypoints`'. Raises as
    :func:`log_lists`."""
    return _log(
        store, run, "keypoints", step, replace,
        lambda meta: ingest_keypoints(store, data, meta=meta, fmt=fmt, columns=columns,
                                      pairs=pairs, pairs_format=pairs_format,
                                      homography_dir=homography_dir,
                                      disparity_dir=disparity_dir,
                                      disparity_scale=disparity_scale,
                                      ransac_threshold=ransac_threshold),
    )  # fmt: skip


def log_outcomes(
    store: Database,
    run: RunRef,
    data: Source | Sequence[Source],
    *,
    step: int,
    replace: bool = False,
    fmt: str | None = None,
    columns: Columns = None,
) -> IngestResult:
    """Store counted outcomes (TP/FP/FN per group) as the evaluation of ``run`` at ``step``;
    the options as :func:`evalstore.ingest.ingest_outcomes`'. Raises as :func:`log_lists`."""
    return _log(
        store, run, "outcomes", step, replace,
        lambda meta: ingest_outcomes(store, data, meta=meta, fmt=fmt, columns=columns),
    )  # fmt: skip


def log_detections(
    store: Database,
    run: RunRef,
    detections: Any,
    ground_truth: Any,
    *,
    step: int,
    replace: bool = False,
    box_format: str = "xywh",
) -> IngestResult:
    """Store a detector's boxes and the ground truth as the evaluation of ``run`` at
    ``step``; the inputs as :meth:`evalstore.Store.ingest_detections`'. Raises as
    :func:`log_lists`."""
    data = read_boxes(detections, ground_truth, box_format)
    return _log(
        store, run, "detection", step, replace,
        lambda meta: ingest_detections(store, data, meta=meta),
    )  # fmt: skip


def _log(
    store: Database,
    run: RunRef,
    task: str,
    step: int,
    replace: bool,
    write: Callable[[RunMeta], R],
) -> R:
    """The step run's metadata, how it meets what the step holds, then ``write`` with the
    link and the parent's unmirroring inside the ingest's transaction."""
    if isinstance(step, bool) or not isinstance(step, numbers.Integral) or step < 0:
        raise InvalidInput(f"step must be a whole number >= 0, got {step!r}")
    step = int(step)  # (a NumPy integer too)
    # a run id (Run.log_lists from a training loop) is that run, if there is one (resolve's
    # rule): steps/prepare finds it, else resolve says it is not there
    by_id = isinstance(run, numbers.Integral) and not isinstance(run, bool)
    parent_id = int(run) if by_id else runs.resolve(store, run)
    keys = {"run_id": parent_id, "step": step}
    found = queries.fetch_rows(store.con, "steps/prepare", keys)
    if not found:
        runs.resolve(store, run)  # raises RunNotFound
        raise AssertionError(f"run {run!r} found by resolve, not by steps/prepare")
    ((experiment, name, commit, params, tags, of, at, existing, linked),) = found
    ref = f"{experiment}/{name}"
    if of is not None:
        raise InvalidInput(
            f"run {ref} is the evaluation of run {of} at step {at}: it takes no steps of its "
            f"own; log to {of}"
        )
    child = step_name(name, step)
    append = False
    if existing is not None:
        held = queries.fetch_rows(store.con, "steps/run_tasks", {"run_id": int(existing)})
        tasks = [t for (t,) in held]
        if task in tasks and not replace:
            raise RunExists(
                f"run {ref} has {task} rows at step {step} already; pass replace=True to "
                "replace them"
            )
        if task in tasks and len(tasks) > 1:
            others = ", ".join(t for t in tasks if t != task)
            raise InvalidInput(
                f"run {ref} at step {step} holds {task} and {others}: replace=True replaces "
                f"a step's {task} rows only when they are all it holds"
            )
        append = task not in tasks
        replace = replace and not append
    meta = RunMeta(
        f"{experiment}/{child}",
        experiment=experiment,
        params=json.loads(params) if params else {},
        tags=list(tags or []),
        notes=None,
        git_commit=commit,
        replace=replace,
        append=append,
    )
    # no link to drop: none at this step, and the step run, new, has none (ids are not reused)
    unlink = existing is not None or bool(linked)
    with _linked(store, {**keys, "experiment": experiment, "name": child}, unlink):
        return write(meta)


@contextlib.contextmanager
def _linked(store: Database, keys: dict[str, Any], unlink: bool = True) -> Iterator[None]:
    """While inside: each transaction of ``store`` links the step run named by ``keys`` to its
    run (when the transaction made it) and drops the run's mirrored values, before it commits.
    The ingest entry points write in ``store.transaction()``: so the link commits with the
    rows. ``unlink`` false: there is no older link of that run and step, or of the step run,
    to drop first."""
    plain = store.transaction
    named = {k: keys[k] for k in ("experiment", "name")}
    committed = False

    @contextlib.contextmanager
    def transaction() -> Iterator[Any]:
        nonlocal committed
        linked = False
        with plain() as con:
            yield con
            if not committed and queries.fetch_rows(con, "store/run_by_name", named):
                if unlink:
                    queries.run(con, "steps/unlink", keys)
                queries.run(con, "steps/link_insert", keys)
                for query in ("steps/unmirror_values", "steps/unmirror_list_values"):
                    queries.run(con, query, {"run_id": keys["run_id"]})
                linked = True
        committed = committed or linked  # (a transaction rolled back links nothing)

    store.transaction = transaction  # type: ignore[method-assign]
    try:
        yield
    finally:
        del store.transaction


class StoreSteps:
    """The methods of :class:`~evalstore.Store` that store evaluations at training steps: each
    one step's rows as the step run NAME@STEP of ``run``, with the options of the matching
    ingest method (the functions above)."""

    def log_lists(self, run: RunRef, data: Source | Sequence[Source], *, task: str, step: int,
                  replace: bool = False, fmt: str | None = None, columns: Columns = None,
                  negate_score: bool = False, labels: str | None = None,
                  groups: Source | None = None, groups_format: str | None = None,
                  qrels: str | None = None) -> IngestResult:  # fmt: skip
        """Store ranked lists as ``run``'s evaluation at training ``step`` (``replace=True``
        replaces that step's ``task`` rows); the options as :meth:`~evalstore.Store.ingest`'s.
        Raises as :func:`log_lists`."""
        return log_lists(self._db(), run, data, task=task, step=step, replace=replace, fmt=fmt,
                         columns=columns, negate_score=negate_score, labels=labels,
                         groups=groups, groups_format=groups_format, qrels=qrels)  # fmt: skip

    def log_keypoints(self, run: RunRef, data: Source | Sequence[Source], *, step: int,
                      replace: bool = False, fmt: str | None = None, columns: Columns = None,
                      pairs: Source | None = None, pairs_format: str | None = None,
                      homography_dir: str | None = None, disparity_dir: str | None = None,
                      disparity_scale: float | None = None,
                      ransac_threshold: float = 3.0) -> IngestResult:  # fmt: skip
        """Store keypoint matches as ``run``'s evaluation at ``step`` (as :meth:`log_lists`)."""
        return log_keypoints(self._db(), run, data, step=step, replace=replace, fmt=fmt,
                             columns=columns, pairs=pairs, pairs_format=pairs_format,
                             homography_dir=homography_dir, disparity_dir=disparity_dir,
                             disparity_scale=disparity_scale,
                             ransac_threshold=ransac_threshold)  # fmt: skip

    def log_outcomes(self, run: RunRef, data: Source | Sequence[Source], *, step: int,
                     replace: bool = False, fmt: str | None = None,
                     columns: Columns = None) -> IngestResult:  # fmt: skip
        """Store counted outcomes as ``run``'s evaluation at ``step`` (as :meth:`log_lists`)."""
        return log_outcomes(self._db(), run, data, step=step, replace=replace, fmt=fmt,
                            columns=columns)  # fmt: skip

    def log_detections(self, run: RunRef, detections: Any, ground_truth: Any, *, step: int,
                       replace: bool = False,
                       box_format: str = "xywh") -> IngestResult:  # fmt: skip
        """Store boxes and truth as ``run``'s evaluation at ``step`` (as :meth:`log_lists`;
        the inputs as :meth:`~evalstore.Store.ingest_detections`')."""
        return log_detections(self._db(), run, detections, ground_truth, step=step,
                              replace=replace, box_format=box_format)  # fmt: skip

    def _db(self) -> Database:
        return cast(Database, self)  # a mixin of Store, which is a Database


class RunSteps:
    """The methods of :class:`~evalstore.Run` (a run opened from a training loop) that store
    its evaluations at training steps: each opens the run's store for the call (waiting up
    to the run's ``lock_timeout`` seconds for its lock) and calls the function above on the
    run, with the same options."""

    path: Path
    run_id: int
    lock_timeout: float

    def log_lists(self, data: Source | Sequence[Source], *, task: str, step: int,
                  replace: bool = False, fmt: str | None = None, columns: Columns = None,
                  negate_score: bool = False, labels: str | None = None,
                  groups: Source | None = None, groups_format: str | None = None,
                  qrels: str | None = None) -> IngestResult:  # fmt: skip
        """Store ranked lists as this run's evaluation at training ``step``:
        ``run.log_lists(frame, task="classification", step=epoch)``; the options as
        :meth:`~evalstore.Store.ingest`'s. Raises as :func:`log_lists`, and
        :class:`~evalstore.errors.StoreLocked` when the store stays locked."""
        with self._store() as store:
            return log_lists(store, self.run_id, data, task=task, step=step, replace=replace,
                             fmt=fmt, columns=columns, negate_score=negate_score,
                             labels=labels, groups=groups, groups_format=groups_format,
                             qrels=qrels)  # fmt: skip

    def log_keypoints(self, data: Source | Sequence[Source], *, step: int,
                      replace: bool = False, fmt: str | None = None, columns: Columns = None,
                      pairs: Source | None = None, pairs_format: str | None = None,
                      homography_dir: str | None = None, disparity_dir: str | None = None,
                      disparity_scale: float | None = None,
                      ransac_threshold: float = 3.0) -> IngestResult:  # fmt: skip
        """Store keypoint matches as this run's evaluation at ``step`` (as
        :meth:`log_lists`)."""
        with self._store() as store:
            return log_keypoints(store, self.run_id, data, step=step, replace=replace, fmt=fmt,
                                 columns=columns, pairs=pairs, pairs_format=pairs_format,
                                 homography_dir=homography_dir, disparity_dir=disparity_dir,
                                 disparity_scale=disparity_scale,
                                 ransac_threshold=ransac_threshold)  # fmt: skip

    def log_outcomes(self, data: Source | Sequence[Source], *, step: int,
                     replace: bool = False, fmt: str | None = None,
                     columns: Columns = None) -> IngestResult:  # fmt: skip
        """Store counted outcomes as this run's evaluation at ``step`` (as :meth:`log_lists`)."""
        with self._store() as store:
            return log_outcomes(store, self.run_id, data, step=step, replace=replace, fmt=fmt,
                                columns=columns)  # fmt: skip

    def log_detections(self, detections: Any, ground_truth: Any, *, step: int,
                       replace: bool = False,
                       box_format: str = "xywh") -> IngestResult:  # fmt: skip
        """Store boxes and truth as this run's evaluation at ``step`` (as :meth:`log_lists`)."""
        with self._store() as store:
            return log_detections(store, self.run_id, detections, ground_truth, step=step,
                                  replace=replace, box_format=box_format)  # fmt: skip

    def _store(self) -> Database:
        return Database(self.path, lock_timeout=self.lock_timeout, create=False)
