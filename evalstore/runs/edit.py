"""Managing runs after ingest: remove several at once or a whole experiment, rename or move
a run to another experiment, edit its notes and parameters.

Each call is one transaction, checked whole before it writes: every run must exist, a new
name must be free, a parameter name must not clash in case with one in use (``v_runs`` holds
one column per name). A run keeps its id, rows and metric values when renamed or edited;
``v_runs`` is rebuilt when its parameter columns change.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evalstore.db import queries
from evalstore.db.schema import refresh_views
from evalstore.errors import InvalidInput, RunExists, RunNotFound, option
from evalstore.runs.registry import (
    RunRef,
    check_key_case,
    delete_runs,
    get_run,
    parse_params,
    resolve_many,
    split_ref,
)

if TYPE_CHECKING:
    from evalstore.db.connection import Database

__all__ = ["remove_runs", "rename_run", "set_run"]


def remove_runs(
    store: Database, refs: Sequence[RunRef] = (), *, experiment: str | None = None
) -> list[dict[str, Any]]:
    """Delete the runs ``refs`` and every run of ``experiment``, with all their rows and their
    step runs (:func:`~evalstore.runs.registry.delete_runs`), in one transaction; returns
    their metadata (as :func:`~evalstore.runs.registry.get_run`).

    Raises:
        RunNotFound: a run does not exist, or the experiment has no runs; nothing is deleted.
    """
    ids = list(resolve_many(store, list(refs))) if refs else []
    if experiment is not None:
        found = [r for (r,) in queries.fetch_rows(store.con, "store/experiment_run_ids",
                                                   {"experiment": experiment})]  # fmt: skip
        if not found:
            raise RunNotFound(f"no runs in experiment {experiment!r}")
        ids += found
    if not ids:
        raise InvalidInput(f"nothing to remove: name runs or an {option('experiment')}")
    ids = list(dict.fromkeys(ids))
    infos = [get_run(store, run_id) for run_id in ids]
    with store.transaction() as con:
        delete_runs(con, ids)  # with their step runs
        refresh_views(con)
    return infos


def rename_run(store: Database, ref: RunRef, new: str) -> dict[str, Any]:
    """Give a run a new name, ``NAME`` (same experiment) or ``EXPERIMENT/NAME`` (moved);
    its step runs become ``NAME@STEP`` there too. Returns its metadata afterwards.

    Raises:
        RunExists: the new name, or a step run's, is taken.
    """
    info = get_run(store, ref)
    # EXPERIMENT/NAME moves it; a bare NAME keeps its experiment
    experiment, name = split_ref(new) if "/" in new else split_ref(new, info["experiment"])
    if (experiment, name) == (info["experiment"], info["name"]):
        return info
    steps = queries.fetch_rows(store.con, "store/run_step_names", {"run_id": info["run_id"]})
    moves = [(info["run_id"], name)] + [(int(s), f"{name}@{step}") for s, step in steps]
    for run_id, new_name in moves:
        taken = queries.fetch_rows(store.con, "store/run_by_name",
                                   {"experiment": experiment, "name": new_name})  # fmt: skip
        if taken and int(taken[0][0]) != run_id:
            raise RunExists(
                f"run {experiment}/{new_name} exists (id {taken[0][0]}); pick another name"
            )
    with store.transaction() as con:
        for run_id, new_name in moves:
            queries.run(con, "store/rename_run",
                        {"run_id": run_id, "experiment": experiment, "name": new_name})  # fmt: skip
    return get_run(store, info["run_id"])


def set_run(
    store: Database,
    ref: RunRef,
    *,
    notes: str | None = None,
    params: Iterable[str] | Mapping[str, Any] | None = None,
    unset: Sequence[str] = (),
) -> dict[str, Any]:
    """Edit a run's notes (``notes``; ``""`` clears them) and parameters (``params`` set or
    change keys, ``key=value`` with JSON values typed as at ingest; ``unset`` removes keys);
    returns its metadata afterwards.

    Raises:
        InvalidInput: a key to unset that the run does not have, or a key that differs only
            in case from one in use.
    """
    info = get_run(store, ref)
    given = parse_params(params)
    missing = [k for k in unset if k not in info["params"]]
    if missing:
        raise InvalidInput(
            f"run {info['experiment']}/{info['name']} has no param {missing[0]!r} "
            f"(params: {', '.join(info['params']) or 'none'})"
        )
    new = {k: v for k, v in {**info["params"], **given}.items() if k not in set(unset)}
    # against every name in use (this run's too): v_runs holds one column per name
    check_key_case(given, [k for (k,) in queries.fetch_rows(store.con, "store/param_keys")])
    with store.transaction() as con:
        if notes is not None:
            queries.run(con, "store/set_run_notes",
                        {"run_id": info["run_id"], "notes": notes or None})  # fmt: skip
        if new != info["params"]:
            queries.run(con, "store/set_run_params",
                        {"run_id": info["run_id"], "params": json.dumps(new)})  # fmt: skip
            refresh_views(con)
    return get_run(store, info["run_id"])
