"""Ingest without holding the store: the reading, checks and sorting in a private staging
store, then one short transaction that copies the run in.

DuckDB lets one process write a file at a time, and readers wait for a writer too. An ingest
that held the store while it read, validated, sorted and indexed its input kept every other
ingest, and every reader, out for as long as that took. :func:`ingest_staged` runs the ingest
(``Store.ingest``, ``ingest_keypoints``, ``ingest_outcomes`` or ``ingest_detections``) on a
staging store, a private file beside the store (``.<name>.<pid>-<token>.stage``, so it spills
to the same disk), and
only then opens the store, waiting its turn for the lock (``lock_timeout``; ``on_wait`` is
told once when it must wait), to copy the run in (``sql/store/merge.sql``): the lock is held
for the copy and the commit alone. A run that exists already is refused before the work when
the store is free to look, else by the merge. ``append`` (a task added to a run of the store)
checks its lists against the store's, so it runs on the store itself, as before. When there
is no store yet, nothing is copied: the staging store, built as any store is (compressed),
becomes the store by a hard link (:func:`~evalstore.store.facade.publish`, as ``write_store``
publishes a new store), so each row is written once; if another process creates the store
meanwhile, the run is merged into that one as above.

Killed at any point, the store is as it was or holds the whole run: the staging file is
private, and the merge is one transaction. A staging file that a killed process left is
removed by the next ingest beside it (:func:`remove_stale`).

The mechanism is :mod:`evalstore.store.staged`'s (on any database class, without polars);
this module runs it on :class:`~evalstore.Store`, and adds :func:`ingest_files`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from evalstore.db.connection import Progress, WaitNotice
from evalstore.ingest import IngestResult
from evalstore.ingest.options import IngestOptions, check_detection, check_hpatches, dispatch
from evalstore.ingest.sources import Source
from evalstore.runs.meta import RunMeta
from evalstore.store import staged
from evalstore.store.facade import Store
from evalstore.store.staged import INGEST_MEMORY, ingest_memory_limit, merge_staged, staging_path

__all__ = [
    "INGEST_MEMORY",
    "ingest_files",
    "ingest_memory_limit",
    "ingest_staged",
    "merge_staged",
    "staging_path",
]


def ingest_staged(
    path: Path,
    action: Callable[[Store], IngestResult],
    *,
    meta: RunMeta | None = None,
    ref: tuple[str, str] | None = None,
    replace: bool = False,
    append: bool = False,
    lock_timeout: float = 10.0,
    on_wait: WaitNotice | None = None,
    on_commit: Callable[[int], None] | None = None,
    on_merge: Callable[[int], None] | None = None,
) -> IngestResult:
    """Run the ingest ``action`` on a staging store, then merge its run into the store at
    ``path`` (created if missing, as :func:`~evalstore.store.facade.write_store` does), holding the
    store's lock for the merge alone. ``meta`` is the run the action ingests (its name,
    ``replace``, ``append``); ``ref`` (the run's experiment and name), ``replace`` and
    ``append`` are kept for compatibility, in its place. With ``append`` the ingest runs on
    the store itself. ``on_commit`` is called with the run id
    as soon as the run is committed (a caller stopped later can say the run is saved);
    ``on_merge`` with the id the run gets in the store, before the commit (a caller stopped
    between the two can look that id up).

    Raises:
        RunExists: the run exists and ``replace`` is false (before the work when the store is
            free to look).
        StoreLocked: the store stayed locked for ``lock_timeout`` seconds at the merge; the
            store is unchanged.
        TypeError: ``meta`` and ``ref``, ``replace`` or ``append``; or neither ``meta`` nor
            ``ref``.
        (and whatever the ingest raises; the store is unchanged)
    """
    return staged.ingest_staged(
        path, action, opener=Store, merge=_merge, meta=meta, ref=ref, replace=replace,
        append=append, lock_timeout=lock_timeout, on_wait=on_wait, on_commit=on_commit,
        on_merge=on_merge,
    )  # fmt: skip


def _merge(*args: Any, **kwargs: Any) -> tuple[int, bool]:
    """:func:`merge_staged` as this module holds it when called (a test may replace it)."""
    return merge_staged(*args, **kwargs)


def ingest_files(
    path: Path,
    files: Sequence[Source],
    meta: RunMeta,
    options: IngestOptions,
    *,
    lock_timeout: float = 10.0,
    on_wait: WaitNotice | None = None,
    on_commit: Callable[[int], None] | None = None,
    on_merge: Callable[[int], None] | None = None,
    progress: Progress | None = None,
) -> list[IngestResult]:
    """``evalstore ingest``: ``files`` into the run ``meta`` of the store at ``path``, by the
    entry point ``options`` name (:func:`~evalstore.ingest.options.dispatch`), staged as
    :func:`ingest_staged` stages it. One result per task (an HPatches folder gives one per
    HPatches task), each with the run's id in the store.

    Raises:
        as :func:`ingest_staged`.
    """
    if options.kind == "hpatches":
        check_hpatches(files, meta)  # before the store is opened or the lock waited for
    elif options.kind == "detection":
        check_detection(files, options)
    results: list[IngestResult] = []

    def action(store: Store) -> IngestResult:
        results[:] = dispatch(store, files, meta, options, progress)
        return results[0]

    merged = ingest_staged(path, action, meta=meta, lock_timeout=lock_timeout, on_wait=on_wait,
                           on_commit=on_commit, on_merge=on_merge)  # fmt: skip
    for each in results:  # every task of the run: the run as merged
        each.run_id, each.replaced = merged.run_id, merged.replaced
    return results
