"""Runs opened from a training loop before they have rows, and the values they log.

``evalstore.init`` / :meth:`Store.start_run` / ``evalstore run new`` create a run at once,
with its metadata (a :class:`~evalstore.runs.meta.RunMeta`: params, tags, notes, git commit,
time) and a ``run_state`` row (schema 22: ``running``, the process and host, the start and
the last sign of life); finishing it marks it ``finished`` or ``failed``. How a running run
whose process died is shown as ``crashed``: :mod:`evalstore.runs.liveness`.

A :class:`~evalstore.store.live.Run` logs scalars at steps in batches (:func:`write_batch`):
the values of a batch, the keys they replace and the heartbeat are written in one
transaction, so a batch lands whole or not at all; the names, values and steps were checked
by the rules of :mod:`evalstore.runs.logged` when logged. A batch that cannot be written
before its process ends (the store stayed locked) is kept in a file beside the store
(``<db>.pending/<run_id>-<pid>-<n>.jsonl``: :func:`write_pending`), which the next
``init``, ``evalstore run new``, ``evalstore log`` or ``evalstore run flush`` on that store
writes in (:func:`load_pending`).
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalstore.db import queries
from evalstore.db.schema import refresh_views
from evalstore.errors import InvalidInput, RunExists
from evalstore.runs.liveness import shown_status, utc_now
from evalstore.runs.logged import logged_names
from evalstore.runs.meta import RunMeta
from evalstore.runs.registry import check_key_case, get_run, open_run

if TYPE_CHECKING:
    from evalstore.db.connection import Database

__all__ = [
    "Batch",
    "Opened",
    "finish_run",
    "load_pending",
    "open_live_run",
    "pending_dir",
    "run_state",
    "touch_run",
    "write_batch",
    "write_pending",
]

FINISHED = ("finished", "failed")


@dataclass(frozen=True)
class Opened:
    """A run opened (or reopened) for logging, and what its values are checked against
    until it is finished: ``names``, every metric name logged in the store;
    ``without_steps``, the run's metrics logged without a step; ``last_step``, the run's
    last logged step (-1: none)."""

    run_id: int
    ref: str
    resumed: bool
    names: frozenset[str]
    without_steps: frozenset[str]
    last_step: int


@dataclass
class Batch:
    """Values of one run to write together: ``metrics[i]`` = ``values[i]`` at ``steps[i]``,
    one value per (metric, step)."""

    metrics: list[str]
    steps: list[int]
    values: list[float]

    def __len__(self) -> int:
        return len(self.values)


def open_live_run(
    store: Database, meta: RunMeta, *, pid: int | None, host: str, resume: bool = False
) -> Opened:
    """Create the run of ``meta`` with no rows, running, opened by process ``pid`` (None:
    none) on ``host``, in one transaction; or, with ``resume``, reopen the run of that name
    (running again, same id; ``meta``'s params and tags are added to its own).

    Raises:
        RunExists: the run exists and not ``resume`` (naming ``resume=True``).
        InvalidInput: as :class:`RunMeta`; a resumed run's param given another value.
    """
    ref = meta.ref
    keys = {"experiment": meta.experiment, "name": meta.name}
    now = utc_now()
    found = queries.fetch_rows(store.con, "store/run_by_name", keys)
    if found and not resume:
        raise RunExists(
            f"run {ref} exists; pass resume=True (--resume) to log to it again, or name another run"
        )
    old = get_run(store, int(found[0][0])) if found else None
    with store.transaction() as con:
        if old is None:
            run_id, _ = open_run(con, meta, replace=False, append=False,
                                 has_task=lambda _: False, task="")  # fmt: skip
        else:
            run_id = int(old["run_id"])
            _add_meta(con, ref, run_id, old, meta)
        queries.run(con, "store/open_run_state",
                    {"run_id": run_id, "pid": pid, "host": host, "now": now})  # fmt: skip
    shape = queries.fetch_rows(store.con, "store/run_logged_shape", {"run_id": run_id})
    return Opened(
        run_id=run_id,
        ref=ref,
        resumed=old is not None,
        names=frozenset(logged_names(store)),
        without_steps=frozenset(m for m, n_steps, _ in shape if not n_steps),
        last_step=max((int(last) for _, n, last in shape if n), default=-1),
    )


def _add_meta(con: Any, ref: str, run_id: int, old: dict[str, Any], meta: RunMeta) -> None:
    """A resumed run's params and tags, with those of ``meta`` added."""
    changed = [k for k, v in meta.params.items() if k in old["params"] and old["params"][k] != v]
    if changed:
        key = changed[0]
        raise InvalidInput(
            f"run {ref} has {key}={json.dumps(old['params'][key])}; resuming it with "
            f"{key}={json.dumps(meta.params[key])} would change it (`evalstore set` edits it)"
        )
    new = {k: v for k, v in meta.params.items() if k not in old["params"]}
    if new:
        check_key_case(new, [k for (k,) in queries.fetch_rows(con, "store/param_keys")])
        params = json.dumps({**old["params"], **new})
        queries.run(con, "store/set_run_params", {"run_id": run_id, "params": params})
        refresh_views(con)
    tags = list(old["tags"]) + [t for t in meta.tags if t not in old["tags"]]
    if len(tags) > len(old["tags"]):
        queries.run(con, "store/set_tags", {"run_id": run_id, "tags": tags})


def run_state(store: Database, run_id: int) -> dict[str, Any] | None:
    """The ``run_state`` row of ``run_id`` as a dict with its shown ``status``
    (:func:`~evalstore.runs.liveness.shown_status`; ``stored``: the column), or None: a run
    made by an ingest."""
    rows = queries.fetch_rows(store.con, "store/run_state", {"run_id": run_id})
    if not rows:
        return None
    status, pid, host, started, beat, finished = rows[0]
    return {"status": shown_status(status, pid, host, beat), "stored": status, "pid": pid,
            "host": host, "started_at": started, "heartbeat_at": beat,
            "finished_at": finished}  # fmt: skip


def finish_run(store: Database, run_id: int, status: str = "finished") -> dict[str, Any]:
    """Mark a run opened for logging ``finished`` or ``failed`` (again: the time of the
    last finish); returns its state afterwards.

    Raises:
        InvalidInput: another status, or a run made by an ingest (nothing to finish).
    """
    _check_status(status)
    if run_state(store, run_id) is None:
        info = get_run(store, run_id)
        raise InvalidInput(
            f"run {info['experiment']}/{info['name']} was made by an ingest, not opened by "
            "`evalstore run new` or evalstore.init: it has nothing to finish"
        )
    with store.transaction() as con:
        queries.run(con, "store/finish_run_state",
                    {"run_id": run_id, "status": status, "now": utc_now()})  # fmt: skip
    state = run_state(store, run_id)
    assert state is not None
    return state


def _check_status(status: object) -> None:
    if status not in FINISHED:
        raise InvalidInput(f"a run finishes as finished or failed, not {status!r}")


def touch_run(store: Database, run_id: int) -> None:
    """A sign of life of a running run (nothing for a finished one, or one of an ingest)."""
    queries.run(store.con, "store/touch_run_state", {"run_id": run_id, "now": utc_now()})


def write_batch(store: Database, run_id: int, batch: Batch, *, finish: str | None = None) -> int:
    """Write ``batch`` for ``run_id`` in one transaction: the values it replaces deleted,
    its values inserted, and the run's heartbeat bumped (or, with ``finish``, the run
    marked ``finished`` or ``failed``): all of it or nothing. Returns the values written."""
    if finish is not None:
        _check_status(finish)
    now = utc_now()
    keys = {"run_id": run_id, "metrics": batch.metrics, "steps": batch.steps}
    with store.transaction() as con:
        if len(batch):
            queries.run(con, "store/delete_batch_values", keys)
            queries.run(con, "store/insert_batch_values",
                        {**keys, "values": batch.values, "now": now})  # fmt: skip
        if finish is None:
            queries.run(con, "store/touch_run_state", {"run_id": run_id, "now": now})
        else:
            queries.run(con, "store/finish_run_state",
                        {"run_id": run_id, "status": finish, "now": now})  # fmt: skip
    return len(batch)


# -- values a process could not write before it ended ----------------------------------------

_COUNTER = itertools.count()


def pending_dir(path: str | os.PathLike[str]) -> Path:
    """The folder beside the store ``path`` that holds batches waiting for it."""
    return Path(f"{os.fspath(path)}.pending")


def write_pending(
    path: str | os.PathLike[str],
    run_id: int,
    ref: str,
    batch: Batch,
    *,
    pid: int | None,
    host: str,
    finish: str | None,
) -> Path:
    """Keep ``batch`` (and the run's finish, if any) in a new file of :func:`pending_dir`,
    written whole (a private name, then renamed); returns the file."""
    folder = pending_dir(path)
    folder.mkdir(exist_ok=True)
    target = folder / f"{run_id}-{os.getpid()}-{next(_COUNTER)}.jsonl"
    head = {"run_id": run_id, "run": ref, "pid": pid, "host": host, "finish": finish,
            "written_at": utc_now().isoformat()}  # fmt: skip
    lines = [json.dumps(head)]
    lines += [json.dumps([m, s, v]) for m, s, v in zip(batch.metrics, batch.steps,
                                                        batch.values, strict=True)]  # fmt: skip
    private = folder / f".{target.name}.part"
    private.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(private, target)
    return target


def load_pending(store: Database) -> list[dict[str, Any]]:
    """Write in the batches kept beside the store (:func:`write_pending`), oldest first,
    each in one transaction with its run's finish, and remove their files; a batch of a run
    deleted since is dropped. Returns what each file held: file, run, values, finish
    (None: not applied), dropped."""
    folder = pending_dir(store.path)
    if not folder.is_dir():
        return []
    done = []
    files = sorted(folder.glob("*.jsonl"), key=lambda p: (p.stat().st_mtime, p.name))
    for file in files:
        try:
            head_line, *lines = file.read_text(encoding="utf-8").splitlines()
        except (FileNotFoundError, ValueError):
            continue  # taken in by another process meanwhile, or empty
        head = json.loads(head_line)
        rows = [json.loads(line) for line in lines if line]
        batch = Batch([r[0] for r in rows], [int(r[1]) for r in rows], [float(r[2]) for r in rows])
        run_id = int(head["run_id"])
        named = queries.fetch_rows(store.con, "store/find_runs", {"refs": [f"id:{run_id}"]})
        dropped = not named or f"{named[0][2]}/{named[0][3]}" != head["run"]
        finish = None
        if not dropped:
            state = queries.fetch_rows(store.con, "store/run_state", {"run_id": run_id})
            same = state and state[0][0] == "running" and state[0][1] == head["pid"]
            finish = head["finish"] if same and state[0][2] == head["host"] else None
            write_batch(store, run_id, batch, finish=finish)
        file.unlink(missing_ok=True)
        done.append({"file": file, "run": head["run"], "values": len(batch), "finish": finish,
                     "dropped": dropped})  # fmt: skip
    return done


def pending_note(file: Path, values: int) -> str:
    """The line that tells where values that could not be written wait, and how they land."""
    return (
        f"evalstore: {values:,} logged value(s) could not be written (the store stayed "
        f"locked); they wait in {file} and land at the next evalstore.init, `evalstore run "
        f"new`, `evalstore log` or `evalstore run flush` on that store"
    )


def shape_of(store: Database, run_id: int) -> Sequence[tuple[Any, ...]]:
    """Each metric of ``run_id``: (metric, steps logged, last step)."""
    return queries.fetch_rows(store.con, "store/run_logged_shape", {"run_id": run_id})
