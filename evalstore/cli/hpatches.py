"""``evalstore ingest --format hpatches``: the options of an HPatches descriptor folder, checked
and passed to :meth:`evalstore.Store.ingest_hpatches`.

Imported by the ingest command's body only; the library is imported inside the function too,
so that nothing here weighs on ``evalstore --help``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalstore.db.connection import Progress
    from evalstore.ingest import IngestResult
    from evalstore.store.facade import Store

__all__ = ["hpatches_action"]


def hpatches_action(
    store: Store,
    files: list[Path],
    task: str | None,
    tasks_dir: Path | None,
    distance: str | None,
    split: str | None,
    distractors: str | None,
    meta: dict[str, Any],
    progress: Progress | None,
    results: list[IngestResult],
) -> IngestResult:
    """Ingest the descriptor folder ``files[0]`` into ``store``; every task's result goes to
    ``results``, the first is returned (for the staging merge, which sets its run id)."""
    from evalstore.errors import InvalidInput
    from evalstore.ingest.hpatches import HPATCHES_TASKS, MATLAB_DISTRACTORS

    if len(files) != 1:
        raise InvalidInput(
            f"--format hpatches reads one descriptor folder (DESC), got {len(files)} paths"
        )
    if tasks_dir is None:
        raise InvalidInput("--format hpatches needs --hpatches-tasks DIR (the benchmark's tasks/)")
    if meta["columns"]:
        raise InvalidInput("--column does not apply to --format hpatches")
    if meta["append"]:
        raise InvalidInput(
            "--append does not apply to --format hpatches: it ingests its tasks into a new run"
        )
    if task is not None and task not in HPATCHES_TASKS:
        raise InvalidInput(
            f"--format hpatches computes {', '.join(HPATCHES_TASKS)}; --task {task} is none of them"
        )
    count: int | None = MATLAB_DISTRACTORS
    if distractors is not None:
        if distractors.strip().lower() == "all":
            count = None
        elif distractors.strip().isdigit() and int(distractors) >= 1:
            count = int(distractors)
        else:
            raise InvalidInput(
                f"--hpatches-distractors must be a count from 1 or 'all', got {distractors!r}"
            )
    done = store.ingest_hpatches(
        files[0],
        tasks_dir=tasks_dir,
        run=meta["run"],
        experiment=meta["experiment"],
        split=split or "a",
        distance=distance or "l2",
        distractors=count,
        tasks=HPATCHES_TASKS if task is None else (task,),
        replace=meta["replace"],
        params=meta["params"],
        tags=meta["tags"],
        notes=meta["notes"],
        created_at=meta["created_at"],
        git_commit=meta["git_commit"],
        progress=progress,
    )
    results[:] = done
    return done[0]
