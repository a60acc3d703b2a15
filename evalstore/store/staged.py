"""An ingest staged in a private store, then merged in a short transaction (or published
whole as a new store), and a write to a store that may not exist yet: what
:mod:`evalstore.store.staging` and :func:`evalstore.store.facade.write_store` do, on stores
that a given ``opener`` opens (a plain :class:`~evalstore.db.connection.Database` by default),
so that the direct path of ``evalstore ingest`` imports neither polars nor the
:class:`~evalstore.Store` facade. :mod:`evalstore.store.staging` says how and why."""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from pathlib import Path as FilePath
from typing import TypeVar

import duckdb

from evalstore.db import queries
from evalstore.db.connection import Database, WaitNotice
from evalstore.db.private_files import private_path, remove_stale, remove_store_files
from evalstore.db.schema import ROW_TABLES, rows_sql
from evalstore.errors import InvalidInput, SchemaError, StoreLocked
from evalstore.ingest.written import IngestResult, check_list_ids
from evalstore.runs import registry as runs
from evalstore.runs.meta import RunMeta

__all__ = [
    "INGEST_MEMORY",
    "ingest_memory_limit",
    "ingest_staged",
    "merge_staged",
    "publish",
    "refuse_existing",
    "staging_path",
    "write_store",
]

LOG = logging.getLogger("evalstore.store.staging")

D = TypeVar("D", bound=Database)
T = TypeVar("T")
R = TypeVar("R", bound=IngestResult)

#: The tables copied by store/merge_<table> after the lists: the list index, and the rows of
#: keypoint (their cameras: sql/schema/023_pose.sql), outcome and detection runs
#: (sql/schema/017_detections.sql).
_MERGED = ("list_stats", "positive_ranks", "tied_ranks", "pairs", "matches", "pair_cameras",
           "outcomes", "det_images", "det_categories", "det_truth", "det_boxes")  # fmt: skip


INGEST_MEMORY = 2 << 30
"""DuckDB's memory limit on the staging store, in bytes (at most DuckDB's own default, 80 % of
RAM; ``$EVALSTORE_MEMORY_LIMIT`` overrides it): the rows of a large ingest spill to disk rather
than grow the process (2e8 rows took 5.3 GiB without it, for the same CPU)."""


def ingest_memory_limit() -> str:
    """The memory limit of an ingest's staging store, as DuckDB spells it."""
    given = os.environ.get("EVALSTORE_MEMORY_LIMIT")
    if given:
        return given
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not a POSIX system: DuckDB's default
        ram = INGEST_MEMORY * 2
    return f"{min(INGEST_MEMORY, int(ram * 0.8)) >> 20}MiB"


def staging_path(store_path: Path) -> Path:
    """A new private staging file beside ``store_path``."""
    return private_path(store_path, ".stage")


def refuse_existing(
    path: Path, ref: tuple[str, str], opener: Callable[..., Database] = Database
) -> None:
    """Refuse a run that exists, before any work, if the store is free to look right now."""
    if not path.exists():
        return
    try:
        with opener(path, read_only=True, lock_timeout=0) as store:
            found = queries.fetch_rows(
                store.con, "store/run_by_name", {"experiment": ref[0], "name": ref[1]}
            )
    except (StoreLocked, SchemaError):
        return  # a writer has it, or an older schema (the writer upgrades it): the merge checks
    if found:
        raise runs.run_exists(*ref)


def merge_staged(
    store: Database,
    stage: Path,
    *,
    replace: bool,
    keep_tags: bool = True,
    on_commit: Callable[[int], None] | None = None,
    on_merge: Callable[[int], None] | None = None,
) -> tuple[int, bool]:
    """Copy the one run of the staging store ``stage`` into ``store``, in one transaction,
    with new list ids; returns (run_id, replaced). A replaced run keeps its id (and its tags
    unless ``keep_tags`` is false: :func:`~evalstore.runs.registry.open_run`).

    Raises:
        RunExists: the run exists in ``store`` and ``replace`` is false.
    """
    con = store.con
    con.execute(queries.template("store/attach_staged", path=queries.literal(str(stage))))
    try:
        with store.transaction():
            (row,) = queries.fetch_rows(con, "store/staged_run")
            run_id, replaced = runs.open_run(
                con, _staged_meta(*row), replace=replace, append=False,
                has_task=lambda _: False, task="", keep_tags=keep_tags,
            )  # fmt: skip
            if on_merge is not None:  # a new run's id is never given twice: the id tells,
                on_merge(run_id)  # later, whether this transaction committed
            ((lo, hi),) = queries.fetch_rows(con, "store/staged_list_span")
            ((first,),) = queries.fetch_rows(con, "store/next_list_id")
            check_list_ids(first, hi - lo)
            moved = {"run_id": run_id, "offset": first - lo}
            queries.run(con, "store/merge_groups", moved)
            for table in sorted(ROW_TABLES):
                text = rows_sql("store/merge_rows", table)
                con.execute(text, queries.bind(text, moved))
            for name in _MERGED:
                queries.run(con, f"store/merge_{name}", moved)
            queries.run(con, "store/set_next_list_id", {"next": first + hi - lo})
        if on_commit is not None:
            on_commit(run_id)
    finally:
        with contextlib.suppress(duckdb.Error):
            queries.run(con, "store/detach_staged")
    return run_id, replaced


def ingest_staged(
    path: Path,
    action: Callable[[D], R],
    *,
    opener: Callable[..., D] = Database,  # type: ignore[assignment]
    merge: Callable[..., tuple[int, bool]] | None = None,
    meta: RunMeta | None = None,
    ref: tuple[str, str] | None = None,
    replace: bool = False,
    append: bool = False,
    lock_timeout: float = 10.0,
    on_wait: WaitNotice | None = None,
    on_commit: Callable[[int], None] | None = None,
    on_merge: Callable[[int], None] | None = None,
) -> R:
    """Run the ingest ``action`` on a staging store, then merge its run into the store at
    ``path`` (created if missing, as :func:`~evalstore.store.facade.write_store` does), holding the
    store's lock for the merge alone. ``meta`` is the run the action ingests (its name,
    ``replace``, ``append``); ``ref`` (the run's experiment and name), ``replace`` and
    ``append`` are kept for compatibility, in its place. ``opener`` opens the stores (the
    staging store ``action`` is given: :class:`~evalstore.Store` by
    :func:`evalstore.store.staging.ingest_staged`); ``merge`` copies the staged run in
    (default :func:`merge_staged`). With ``append`` the ingest runs on
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
    if meta is not None:
        if ref is not None or replace or append:
            raise TypeError(
                "the run is given twice, as meta= and as ref=, replace= or append=: pass "
                "meta= alone"
            )
        ref, replace, append = (meta.experiment, meta.name), meta.replace, meta.append
    elif ref is None:
        raise TypeError("missing the run: pass meta=RunMeta(...) (or ref=)")
    keep_tags = meta.keep_tags if meta is not None else True
    done = on_commit or (lambda _: None)
    if append:

        def appended(store: D) -> R:
            result = action(store)  # one transaction, committed on return
            done(result.run_id)
            return result

        LOG.debug("--append: run %s/%s is ingested on the store itself", *ref)
        return write_store(
            path, appended, lock_timeout=lock_timeout, on_wait=on_wait, opener=opener
        )
    remove_stale(path)
    if not replace:
        refuse_existing(path, ref, opener)
    stage = staging_path(path)
    LOG.debug("staging run %s/%s in %s; the store is held for the merge alone", *ref, stage)
    # no store yet: the staging store becomes the store, published whole by a hard link (each
    # row written once); if another process creates it meanwhile, the run is merged as below
    new = not path.exists()
    try:
        with opener(stage, memory_limit=ingest_memory_limit()) as staging:
            if not new:  # a file read once and deleted: not worth compressing
                staging.con.execute("set force_compression = 'uncompressed'")
            result = action(staging)
            staging.con.execute("checkpoint")  # the whole run in the file, no WAL to replay
        if new:  # (as write_store's publish: the run is saved when the link is made)
            if publish(stage, path):
                done(result.run_id)
                result.replaced = False
                return result
            LOG.debug("%s was created meanwhile: the run is merged into it", path)
        run_id, replaced = write_store(
            path,
            lambda store: (merge or merge_staged)(
                store,
                stage,
                replace=replace,
                keep_tags=keep_tags,
                on_commit=None if new else done,
                on_merge=on_merge,
            ),
            lock_timeout=lock_timeout,
            on_wait=on_wait,
            opener=opener,
        )
        if new:
            done(run_id)
    finally:
        remove_store_files(stage)
    result.run_id, result.replaced = run_id, replaced
    return result


def write_store(
    path: str | os.PathLike[str],
    action: Callable[[D], T],
    *,
    lock_timeout: float = 10.0,
    on_wait: WaitNotice | None = None,
    opener: Callable[..., D] = Database,  # type: ignore[assignment]
) -> T:
    """Run ``action`` on the writable store at ``path`` and return what it returns
    (``on_wait``: told once if the store's lock must be waited for).

    A store that does not exist yet is built in a private file beside ``path`` and appears
    at ``path`` only when ``action`` succeeds, by a hard link, which never replaces a file. A
    failed first command therefore leaves nothing behind, and never removes a store that
    another process created in the meantime; when another process created ``path`` first,
    ``action`` runs again on that store (and may then fail there, e.g. with
    :class:`~evalstore.errors.RunExists`, leaving the other process's runs as they are).

    A process killed while building the private file leaves it behind as
    ``.<name>.<pid>-<token>.new``; it holds nothing that ``path`` needs, and the next
    ``write_store`` beside it removes it (:func:`remove_stale`). ``action`` is given the
    store as ``opener`` opens it (:class:`~evalstore.Store` by
    :func:`evalstore.store.facade.write_store`).
    """
    target = FilePath(path)
    remove_stale(target)
    if target.exists():
        with opener(target, lock_timeout=lock_timeout, on_wait=on_wait) as store:
            return action(store)
    folder = target.parent
    if not folder.is_dir():
        raise InvalidInput(f"{target}: folder {folder} does not exist")
    private = private_path(target, ".new")
    try:
        with opener(private, lock_timeout=lock_timeout) as store:
            result = action(store)
            store.con.execute("checkpoint")  # everything in the file itself, no WAL left
        if publish(private, target):
            return result
    finally:
        remove_store_files(private)
    with opener(target, lock_timeout=lock_timeout, on_wait=on_wait) as store:  # another was first
        return action(store)


def publish(private: FilePath, target: FilePath) -> bool:
    """Give the finished private store the name ``target`` unless that name is taken."""
    try:
        os.link(private, target)
    except FileExistsError:
        return False
    except OSError:  # a file system without hard links: claim the name, then move in
        try:
            fd = os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return False
        os.close(fd)
        os.replace(private, target)
    return True


def _staged_meta(
    experiment: str,
    name: str,
    created_at: datetime,
    commit: str | None,
    params: str,
    tags: list[str],
    notes: str | None,
) -> RunMeta:
    """The RunMeta of a staged run's ``runs`` row. A name holding ``/`` is given with its
    experiment (which then holds none: ``EXPERIMENT/NAME`` splits at the first ``/``)."""
    return RunMeta(f"{experiment}/{name}" if "/" in name else name, experiment=experiment,
                   params=json.loads(params), tags=tags, notes=notes, created_at=created_at,
                   git_commit=commit)  # fmt: skip
