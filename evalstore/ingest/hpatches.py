"""Ingest of an HPatches descriptor folder: the benchmark's three tasks computed from the
descriptors and the task files, into one run, in one transaction.

:func:`ingest_hpatches` reads and checks everything first (the task files, the split's
sequences, every descriptor file: :mod:`evalstore.ingest.formats.hpatches`,
:mod:`~evalstore.ingest.formats.hpatches_tasks`), computes the lists
(:mod:`~evalstore.ingest.formats.hpatches_lists`) into Parquet parts of a private work folder,
then writes the tasks of the run in a single transaction: the run holds all of them or the
store is as it was.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalstore.errors import InvalidInput, option, spelled
from evalstore.ingest.formats.hpatches import DISTANCES, load_descriptors
from evalstore.ingest.formats.hpatches_lists import (
    Parts,
    matching_lists,
    retrieval_lists,
    verification_lists,
)
from evalstore.ingest.formats.hpatches_tasks import (
    SPLITS,
    check_patches,
    read_split,
    read_task_files,
)
from evalstore.ingest.lists import read_groups
from evalstore.ingest.sources import open_source
from evalstore.ingest.stream import insert_stream
from evalstore.ingest.validate import Spec, decide_storage
from evalstore.ingest.write import IngestResult, Target, write_run
from evalstore.runs.meta import RunMeta, run_meta

if TYPE_CHECKING:
    import polars as pl

    from evalstore.db.connection import Database, Progress

__all__ = ["HPATCHES_TASKS", "MATLAB_DISTRACTORS", "ingest_hpatches"]

HPATCHES_TASKS = ("verification", "matching", "retrieval")
#: distractors per retrieval query: the MATLAB benchmark's default ``opts.num_neg = 2000``
MATLAB_DISTRACTORS = 2000


def ingest_hpatches(
    store: Database,
    descriptors: str | os.PathLike[str],
    *,
    tasks_dir: str | os.PathLike[str],
    meta: RunMeta | None = None,
    split: str = "a",
    distance: str = "l2",
    distractors: int | None = MATLAB_DISTRACTORS,
    tasks: Sequence[str] = HPATCHES_TASKS,
    block_rows: int | None = None,
    progress: Progress | None = None,
    run: str | None = None,
    experiment: str | None = None,
    replace: bool = False,
    params: Sequence[str] | Mapping[str, Any] | None = None,
    tags: Sequence[str] = (),
    notes: str | None = None,
    created_at: str | datetime | None = None,
    git_commit: str | bool | None = True,
) -> list[IngestResult]:
    """Compute the HPatches tasks from a descriptor folder and ingest them into one run.

    Args:
        store: an open, writable store.
        descriptors: the descriptor folder ``DESC`` (``DESC/<sequence>/{ref,e1..t5}.csv``),
            e.g. hpatches-benchmark's ``data/descriptors/<name>``.
        tasks_dir: the benchmark's ``tasks/`` folder (``splits/splits.json``,
            ``verif_*_split-<split>.csv``, ``retr_*_split-<split>.csv``).
        meta: the run's name and metadata (:class:`~evalstore.runs.meta.RunMeta`);
            ``meta.params`` records ``descriptor`` (the folder's name), ``split``,
            ``distance`` and ``distractors`` unless given. ``meta.append`` is refused: the
            tasks go into a new run (or replace one).
        split: ``a`` (the default, as the Python benchmark's), ``b``, ``c``, ``full``,
            ``illum`` or ``view``: the task files read, and the sequences of matching.
        distance: ``l2`` (default), ``l2sq``, ``l1``, ``cosine`` or ``hamming`` (packed bits).
        distractors: distractors per retrieval query, the first of the file (default 2000,
            the MATLAB benchmark's; None: all of them, as the article).
        tasks: a subset of ``verification``, ``matching``, ``retrieval``.
        block_rows: rows of a block of distances (default: as many as fit 64 MiB).
        progress: called with (stage, done, total or None).
        run, experiment, replace, params, tags, notes, created_at, git_commit: kept for
            compatibility: the fields of ``meta``, given instead of it (never with it).

    Returns:
        One :class:`IngestResult` per task, in the order of ``tasks``.

    Raises:
        InvalidInput: a missing, malformed or inconsistent file (named, with its line where
            there is one), or bad options; nothing is written.
        RunExists: the run exists and ``meta.replace`` is false.
        TypeError: ``meta`` and one of the keywords kept for compatibility.
    """
    chosen = tuple(dict.fromkeys(tasks))
    unknown = [t for t in chosen if t not in HPATCHES_TASKS]
    if unknown or not chosen:
        raise InvalidInput(
            f"tasks= names the HPatches tasks {', '.join(HPATCHES_TASKS)}, not "
            f"{unknown[0] if unknown else 'nothing'!r}"
        )
    if split not in SPLITS:
        raise InvalidInput(f"unknown {option('split', split)}; use one of {', '.join(SPLITS)}")
    if distance not in DISTANCES:
        raise InvalidInput(
            f"unknown {option('distance', distance)}; use one of {', '.join(DISTANCES)}"
        )
    if distractors is not None and distractors < 1:
        raise InvalidInput(f"{option('distractors')} must be at least 1, got {distractors}")
    meta = run_meta(meta, run=run, experiment=experiment, params=params, tags=tags, notes=notes,
                    created_at=created_at, git_commit=git_commit, replace=replace)  # fmt: skip
    if meta.append:
        raise InvalidInput(
            f"{option('append', True)} does not apply to "
            f"{spelled('Store.ingest_hpatches', '--format hpatches')}: it ingests its tasks into "
            "a new run"
        )
    recorded: dict[str, Any] = {"descriptor": Path(descriptors).name, "split": split}
    recorded["distance"] = distance
    if "retrieval" in chosen:
        recorded["distractors"] = "all" if distractors is None else distractors
    meta = dataclasses.replace(meta, params={**recorded, **meta.params})
    test = read_split(tasks_dir, split)
    files = read_task_files(tasks_dir, split, chosen)
    folder = Path(descriptors)
    named = [s for s in files.sequences() if s not in test and (folder / s).is_dir()]
    with tempfile.TemporaryDirectory(prefix="evalstore-hpatches-") as tmp:
        work = Path(tmp)
        desc = load_descriptors(folder, [*test, *named], distance, work / "desc", progress)
        check_patches(files, desc)
        lists: dict[str, tuple[Parts, pl.DataFrame]] = {}
        for task in chosen:
            parts = Parts(work, task)
            if task == "verification":
                groups = verification_lists(desc, files, parts, progress)
            elif task == "matching":
                groups = matching_lists(desc, test, parts, block_rows, progress)
            else:
                groups = retrieval_lists(desc, files, parts, distractors, block_rows, progress)
            lists[task] = (parts, groups)
        paths = {key: str(path) for key, path in (files.paths or {}).items()}
        inputs = {
            "verification": [paths.get(k, "") for k in ("pos", "neg_inter", "neg_intra")],
            "matching": [str(folder)],
            "retrieval": [paths.get(k, "") for k in ("queries", "distractors")],
        }
        results = []
        with store.transaction():
            for i, (task, (parts, groups)) in enumerate(lists.items()):
                target = Target(
                    meta, meta.replace and i == 0, i > 0, read_groups(groups, None, task), None
                )
                result = _write(store, target, task, parts, progress)
                result.files = inputs[task]
                results.append(result)
    for result in results[1:]:
        result.replaced = results[0].replaced
    return results


def _write(
    store: Database, target: Target, task: str, parts: Parts, progress: Progress | None
) -> IngestResult:
    """One task's parts into the run, inside the caller's transaction."""
    if not parts.paths:
        raise InvalidInput(f"HPatches: no {task} lists to ingest")
    spec = Spec(task, {}, "pm1", False)
    opened = [open_source(path, "parquet", i) for i, path in enumerate(parts.paths)]
    decide_storage(spec, opened)
    return write_run(
        store,
        target,
        spec,
        lambda first: insert_stream(store.con, opened, spec, first, progress),
        transaction=False,
    )
