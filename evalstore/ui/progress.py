"""The Compare page while it computes: the comparison runs in a thread of its own, keyed by
the request, and a page that is not answered within ``wait`` seconds, once it resamples the
items of a metric (seconds at a million pairs), shows its progress instead: the replicates
done of each metric whose items are resampled and the running estimate of their interval and
p-value (:mod:`evalstore.analysis.watching`). ``/static/progress.js`` polls it
(``/compare/progress?job=N``) until the answer is whole, then reloads the page: the same
request, now answered by the finished computation. A page that resamples no items (lists are
resampled: quick) waits for its answer, as every other page does, up to ``latest`` seconds
(:data:`LATEST`): then it too shows that it computes (reading the values and items of a
million pairs takes about a second).

A computation is keyed by the view's URL and the store's files (size and time of change, the
write-ahead log's too): a request of the same view of an unchanged store while it runs (the
reload that follows the progress, another tab) is served by it, and a write starts a new one.
An answer is kept until a request is served it (:meth:`Jobs.forget`), at most :data:`KEEP`
of them (a page left before its answer came); the next request computes anew, as every other
page does. A computation whose page nobody waits for or polls any more for :data:`ABANDON`
seconds (the page was left) stops at its next block of replicates: the store is free again.
"""

from __future__ import annotations

import contextlib
import html
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from evalstore.analysis.compare_caveats import with_caveats
from evalstore.analysis.watching import Step, Watch, watching
from evalstore.ui.shell import data_table, message

__all__ = [
    "ABANDON",
    "KEEP",
    "LATEST",
    "SLOW",
    "WAIT",
    "Abandoned",
    "Answer",
    "Job",
    "Jobs",
    "page_progress",
    "progress_body",
    "progress_page",
    "progress_state",
    "store_signature",
]

#: Seconds a Compare request waits for its answer before the page shows progress instead,
#: once it resamples items.
WAIT = 0.5
#: Seconds after which the page shows progress whatever it computes.
LATEST = 1.5
#: Seconds after which the other pages (Runs, Curves, History, Per list, SQL) show progress.
SLOW = 2.0
#: Finished computations kept until served (pages left before their answer came).
KEEP = 4
#: Seconds without a request waiting for a computation or polling it after which it stops.
ABANDON = 10.0


class Abandoned(Exception):
    """A computation nobody waits for any more (its page was left): it stops."""


@dataclass(frozen=True)
class Answer:
    """A page's body (HTML), its HTTP status and the store's experiments (the filters')."""

    status: int
    html: str
    experiments: list[str]


class Job:
    """One computation of a page: its ``watch`` (the resampling so far; ``watch.begun`` set
    once the items of a metric are resampled, or the computation finished), ``finished`` once
    answered, and the store's ``experiments`` (the filters of the progress page)."""

    def __init__(self, ident: int, key: Hashable) -> None:
        self.ident = ident
        self.key = key
        self.watch: Watch = _Watched(self)
        self.finished = threading.Event()
        self.experiments: list[str] = []
        self.answer: Answer | None = None
        self.error: BaseException | None = None
        self._lock = threading.Lock()
        self._waiting = 0
        self._seen_at = self.started = time.monotonic()
        #: What the progress display says before any resampling (the page's own words).
        self.status = "Reading the runs' values (and the items of few lists)…"

    def touch(self) -> None:
        """Someone polls the computation (the progress display)."""
        self._seen_at = time.monotonic()

    @contextlib.contextmanager
    def waited(self) -> Iterator[Job]:
        """A request waits for the computation while in the block."""
        with self._lock:
            self._waiting += 1
        try:
            yield self
        finally:
            with self._lock:
                self._waiting -= 1
            self.touch()

    @property
    def abandoned(self) -> bool:
        """Nobody waits for the computation nor polled it for :data:`ABANDON` seconds."""
        return self._waiting == 0 and time.monotonic() - self._seen_at > ABANDON

    def seen(self, experiments: list[str]) -> None:
        """The store's experiments (read before the comparison)."""
        self.experiments = experiments

    def result(self) -> Answer:
        """The finished answer (re-raises what the computation raised)."""
        if self.error is not None:
            raise self.error
        if self.answer is None:
            raise RuntimeError("the computation has not finished")
        return self.answer

    @property
    def retry(self) -> bool:
        """A finished computation a new request recomputes (it failed, or the store was
        busy)."""
        return self.finished.is_set() and (
            self.error is not None or (self.answer is not None and self.answer.status == 503)
        )


class _Watched(Watch):
    """A job's watch: each block of replicates first checks that the job is not abandoned."""

    def __init__(self, job: Job) -> None:
        super().__init__()
        self._job = job

    def update(self, **changes: object) -> None:
        if self._job.abandoned:
            raise Abandoned(f"computation {self._job.ident}: nobody waits for it")
        super().update(**changes)


class Jobs:
    """The computations of an app, by key (:func:`store_signature` and the view) and id."""

    def __init__(self, keep: int = KEEP) -> None:
        self._lock = threading.Lock()
        self._jobs: OrderedDict[Hashable, Job] = OrderedDict()
        self._count = 0
        self._keep = keep

    def start(self, key: Hashable, compute: Callable[[Job], Answer]) -> Job:
        """The computation of ``key``: the one under way or kept, else ``compute`` started
        in a thread of its own (watched)."""
        with self._lock:
            job = self._jobs.get(key)
            if job is not None and not job.retry:
                self._jobs.move_to_end(key)
                return job
            self._count += 1
            job = self._jobs[key] = Job(self._count, key)
            self._prune()
        threading.Thread(
            target=_run, args=(job, compute), name=f"evalstore-ui-job-{job.ident}", daemon=True
        ).start()
        return job

    def forget(self, job: Job) -> None:
        """The answer of ``job`` is served: the next request of its view computes anew."""
        with self._lock:
            if self._jobs.get(job.key) is job:
                del self._jobs[job.key]

    def get(self, ident: int) -> Job | None:
        """The computation of id ``ident``, if kept (polled: :meth:`Job.touch`)."""
        with self._lock:
            job = next((j for j in self._jobs.values() if j.ident == ident), None)
        if job is not None:
            job.touch()
        return job

    def _prune(self) -> None:
        done = [k for k, j in self._jobs.items() if j.finished.is_set()]
        for key in done[: max(0, len(done) - self._keep)]:
            del self._jobs[key]


def _run(job: Job, compute: Callable[[Job], Answer]) -> None:
    try:
        with watching(job.watch):
            job.answer = compute(job)
    except BaseException as exc:  # re-raised by the request that reads the answer
        job.error = exc
    finally:
        job.finished.set()
        job.watch.begun.set()  # whoever waits for the resampling: the answer is there


def store_signature(path: Path) -> tuple[Any, ...]:
    """The size and time of change of the store's file and of its write-ahead log."""
    out: list[Any] = []
    for file in (path, path.with_name(path.name + ".wal")):
        try:
            stat = file.stat()
        except OSError:
            out.append(None)
        else:
            out.append((stat.st_size, stat.st_mtime_ns))
    return tuple(out)


def _number(value: float | None) -> float | None:
    """``value``, None for a missing or NaN one (JSON has no NaN)."""
    return None if value is None or value != value else value


def _count(done: int, total: int) -> str:
    return f"{done:,} of {total:,}"


def _steps_frame(steps: list[Step]) -> pl.DataFrame:
    rows = []
    for i, step in enumerate(steps):
        estimate = step.estimate()
        drawn = _count(step.done, step.total)
        if step.swaps_total:
            drawn += f"; rank-swap test {_count(step.swaps_done, step.swaps_total)}"
        under_way = i == len(steps) - 1
        rows.append(
            {
                "run": step.unit,
                "task": step.task,
                "metric": step.metric,
                "replicates": drawn,
                "ci_low": None if estimate is None else estimate.ci_low,
                "ci_high": None if estimate is None else estimate.ci_high,
                "p_value": None if estimate is None else estimate.p_value,
                "state": "provisional: under way" if under_way else "provisional: all drawn",
                "n_lists": step.n_lists or None,
            }
        )
    frame = pl.DataFrame(
        rows,
        schema={
            "run": pl.String, "task": pl.String, "metric": pl.String, "replicates": pl.String,
            "ci_low": pl.Float64, "ci_high": pl.Float64, "p_value": pl.Float64,
            "state": pl.String, "n_lists": pl.Int64,
        },
    )  # fmt: skip
    # as the final table says it: clipped to the metric's range, few lists warned
    return with_caveats(frame).drop("n_lists")


def progress_body(job: Job) -> str:
    """What the computation has done (HTML): the metric under way and its replicates done
    of total, and per metric resampled so far the running estimate (provisional)."""
    steps = job.watch.steps()
    if not steps:
        status = f"{job.status} ({time.monotonic() - job.started:.0f} s so far)"
        return f'<p class="count" id="progress-status">{html.escape(status)}</p>'
    now = steps[-1]
    done = now.done + now.swaps_done
    total = now.total + now.swaps_total
    status = (
        f"Resampling the items of {now.unit} against {now.baseline}: {now.task} "
        f"{now.metric}, {_count(now.done, now.total)} replicates"
        + (f", rank-swap test {_count(now.swaps_done, now.swaps_total)}" if now.swaps_total else "")
        + "."
    )
    bar = f'<progress id="progress-bar" max="{total}" value="{done}"></progress>'
    frame = _steps_frame(steps)
    table = data_table(frame, frame.columns, ident="progress-table")
    said = message(
        "Provisional: the interval and p-value of the replicates drawn so far (for "
        "configurations, the seeds drawn apart); the final table replaces them."
    )
    return f'<p class="count" id="progress-status">{html.escape(status)}</p>{bar}{said}{table}'


def progress_page(job: Job) -> str:
    """The Compare page's body while the computation runs: :func:`progress_body` in a panel
    that ``/static/progress.js`` refreshes."""
    return (
        f'<section class="panel" id="compare-progress" data-poll="/compare/progress?job='
        f'{job.ident}"><h2>Computing the comparison</h2><p class="desc">'
        "These runs' items are resampled (1,000 replicates a metric): this page shows how far "
        "it has gone and updates itself until the answer replaces it.</p>"
        f'<div id="progress-body">{progress_body(job)}</div></section>'
    )


def page_progress(job: Job, title: str) -> str:
    """Another page's body while it is computed for more than :data:`SLOW` seconds: what
    it does and for how long so far, refreshed by ``/static/progress.js`` until the answer
    replaces it."""
    return (
        f'<section class="panel" id="page-progress" data-poll="/compare/progress?job='
        f'{job.ident}"><h2>Computing the {html.escape(title)} page</h2><p class="desc">'
        "It takes a while: this page updates itself until the answer replaces it.</p>"
        f'<div id="progress-body">{progress_body(job)}</div></section>'
    )


def progress_state(job: Job | None) -> dict[str, Any]:
    """The JSON of ``/compare/progress``: ``done`` (the page may reload: the computation
    finished, or is unknown), ``html`` (:func:`progress_body`) and ``steps`` (each metric's
    replicates done and its running estimate)."""
    if job is None or job.finished.is_set():
        return {"done": True, "html": "", "steps": []}
    steps = []
    for step in job.watch.steps():
        estimate = step.estimate()
        steps.append(
            {
                "run": step.unit,
                "baseline": step.baseline,
                "task": step.task,
                "metric": step.metric,
                "params": step.params,
                "done": step.done,
                "total": step.total,
                "swaps_done": step.swaps_done,
                "swaps_total": step.swaps_total,
                "ci_low": None if estimate is None else _number(estimate.ci_low),
                "ci_high": None if estimate is None else _number(estimate.ci_high),
                "p_value": None if estimate is None else _number(estimate.p_value),
            }
        )
    return {"done": False, "html": progress_body(job), "steps": steps}
