"""Configurations: the runs of one experiment whose params are equal except for a seed.

A configuration (a *group*) is found from the runs' params: every parameter but the seed
(``seed_param``, default ``seed``) must be equal, or, with ``group_by``, only the parameters
named. :func:`groups` gives each configuration's mean, spread and 95% interval across seeds
per metric (``evalstore groups``; the view ``v_groups`` is the same query with the default
seed parameter), :func:`select` finds the configuration a selector such as ``lr=0.01`` names
(``compare -g``), and :func:`leaderboard` pivots configurations x headline metrics.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from evalstore.analysis.evaluate import evaluate, resolve_ties, with_protocol
from evalstore.analysis.group_caveats import with_caveats
from evalstore.analysis.step_runs import step_map
from evalstore.db import queries
from evalstore.errors import InvalidInput
from evalstore.metrics import protocols
from evalstore.metrics.registry import DEFAULTS, get

if TYPE_CHECKING:
    from evalstore.runs.registry import RunRef
    from evalstore.store.facade import Store

__all__ = [
    "GROUP_COLUMNS",
    "Unit",
    "config_unit",
    "configs",
    "experiment_run_ids",
    "groups",
    "holds_params",
    "parse_selector",
    "run_unit",
    "select",
]

GROUP_COLUMNS = [
    "experiment",
    "group",
    "config",
    "task",
    "metric",
    "params",
    "protocol",
    "n_runs",
    "mean",
    "sd",
    "ci_low",
    "ci_high",
    "min",
    "max",
    "runs",
]


@dataclass(frozen=True)
class Unit:
    """What a comparison compares: one run, or the runs of one configuration (its seeds).

    Attributes:
        label: how results name it (``exp/name`` for a run, the group's label otherwise).
        experiment: the experiment of its runs.
        config: the grouping parameters as ``key=value, ...`` text.
        run_ids: its runs, by seed.
        seeds: each run's seed (text; None without one).
        group: True when it was asked for as a configuration (``-g``), even of one run.
    """

    label: str
    experiment: str
    config: str
    run_ids: tuple[int, ...]
    seeds: tuple[str | None, ...]
    group: bool = False


def configs(
    store: Store, *, seed_param: str = "seed", group_by: Sequence[str] | None = None
) -> pl.DataFrame:
    """Each run's configuration: run_id, experiment, run, name, created_at, config, seed and
    config_key (what groups runs: a run without the seed parameter is its own configuration,
    unless ``group_by`` names the parameters to group on)."""
    _check_keys(seed_param, group_by)
    return queries.fetch(store.con, "compare/configs", _params(seed_param, group_by))


def _params(seed_param: str, group_by: Sequence[str] | None) -> dict[str, Any]:
    """The bound values of compare/configs and compare/groups."""
    return {"seed": seed_param, "keys": None if group_by is None else list(group_by)}


def _check_keys(seed_param: str, group_by: Sequence[str] | None) -> None:
    if not seed_param:
        raise InvalidInput("--seed-param must name a parameter")
    if group_by is not None and (not group_by or not all(k.strip() for k in group_by)):
        raise InvalidInput("--group-by needs parameter names (e.g. --group-by lr)")


def label(experiment: str, names: Sequence[str], config: str) -> str:
    """A configuration's label: its run for one run; else the runs' common name prefix
    without a trailing seed marker (``mlp-32-seed0``, ``mlp-32-seed1`` -> ``exp/mlp-32``), or
    the configuration's parameters when the names share none."""
    if len(names) == 1:
        return f"{experiment}/{names[0]}"
    prefix = names[0]
    for name in names[1:]:
        while not name.startswith(prefix):
            prefix = prefix[:-1]
    prefix = re.sub(r"([-_.:= ]+(seed|s|rep|run)?)?[-_.:= ]*$", "", prefix)
    return f"{experiment}/{prefix}" if prefix else f"{experiment}: {config or '(no params)'}"


def _wanted(
    frame: pl.DataFrame, metrics: Sequence[str] | None, protocol: str | None, ties: str
) -> pl.DataFrame:
    """Values of the protocol asked for (or none); without ``metrics`` only each task's
    standard metrics (or the protocol's) at the tie policy in force."""
    frame = with_protocol(frame).filter(pl.col("protocol") == (protocol or "default"))
    if metrics:
        names = {get(m).name for m in metrics} | set(metrics)
        return frame.filter(pl.col("base_metric").is_in(names) | pl.col("metric").is_in(names))
    chosen = protocols.get(protocol).metrics if protocol else DEFAULTS
    keep = [
        (pl.col("task") == task) & pl.col("base_metric").is_in(list(names))
        for task, names in chosen.items()
    ]
    if not keep:
        return frame.clear()
    any_keep = keep[0]
    for k in keep[1:]:
        any_keep = any_keep | k
    same_ties = pl.col("params").str.json_path_match("$.ties").fill_null(ties) == ties
    return frame.filter(any_keep & same_ties)


def experiment_run_ids(store: Store, experiment: str | None) -> list[int]:
    """The ids of the runs of ``experiment`` (None: every run).

    Raises:
        InvalidInput: there are none.
    """
    ids = [
        int(r[0])
        for r in queries.fetch_rows(
            store.con, "compare/experiment_runs", {"experiment": experiment}
        )
    ]
    if not ids:
        raise InvalidInput(
            f"no runs in experiment {experiment!r}" if experiment else "no runs in the store"
        )
    return ids


def groups(
    store: Store,
    *,
    experiment: str | None = None,
    metrics: Sequence[str] | None = None,
    seed_param: str = "seed",
    group_by: Sequence[str] | None = None,
    protocol: str | None = None,
    compute: bool = True,
) -> pl.DataFrame:
    """Each configuration's statistics across its seeds, per metric.

    Metrics missing for some runs are computed first (the task's standard metrics, or
    ``metrics``), unless ``compute`` is False.

    Returns:
        One row per (configuration, task, metric, params) with :data:`GROUP_COLUMNS` (and
        ``base_metric``, ``n_values``, ``run_ids``, ``seeds``, ``last_created``): ``mean``,
        ``sd`` (n - 1 in the denominator), ``ci_low``/``ci_high`` the 95% Student t
        interval of the mean across runs (None for one run) clipped to the metric's range,
        ``min``, ``max``, ``runs`` by seed, ``caveat``
        (:func:`~evalstore.analysis.group_caveats.with_caveats`).

    Raises:
        InvalidInput: no runs (in the experiment), or no values of the metrics.
    """
    _check_keys(seed_param, group_by)
    ids = experiment_run_ids(store, experiment)
    if compute:
        with contextlib.suppress(InvalidInput):  # some runs lack the task: reported below
            evaluate(store, ids, metrics=metrics, protocol=protocol)
    ties = resolve_ties(None, None if protocol is None else protocols.get(protocol))
    frame = queries.fetch(store.con, "compare/groups", _params(seed_param, group_by))
    if experiment is not None:
        frame = frame.filter(pl.col("experiment") == experiment)
    frame = _wanted(frame, metrics, protocol, ties)
    if frame.height == 0:
        what = f"of {', '.join(metrics)} " if metrics else ""
        raise InvalidInput(f"no values {what}to group{' in ' + experiment if experiment else ''}")
    names = frame["runs"].to_list()
    frame = frame.with_columns(
        group=pl.Series(
            [
                label(e, [n.split("/", 1)[1] for n in ns], c)
                for e, ns, c in zip(frame["experiment"], names, frame["config"], strict=True)
            ],
            dtype=pl.String,
        )
    )
    order = {t: i for i, t in enumerate(DEFAULTS)}
    frame = frame.with_columns(_task_order=pl.col("task").replace_strict(order, default=99))
    frame = frame.sort(["experiment", "_task_order", "metric", "params", "group"]).drop(
        "_task_order"
    )
    extra = ["base_metric", "n_values", "run_ids", "seeds", "last_created", "caveat"]
    return with_caveats(frame).select([*GROUP_COLUMNS, *extra])


# ----------------------------------------------------------------------------- selecting


def parse_selector(text: str) -> dict[str, str]:
    """``lr=0.01,arch=r18`` -> {"lr": "0.01", "arch": "r18"}.

    Raises:
        InvalidInput: a part without ``=`` or with an empty name.
    """
    out: dict[str, str] = {}
    for part in text.split(","):
        key, eq, value = part.partition("=")
        key = key.strip()
        if not eq or not key:
            raise InvalidInput(
                f"-g {text!r}: a group is named by KEY=VALUE[,KEY=VALUE...] (e.g. -g lr=0.01)"
            )
        out[key] = value.strip()
    return out


def _same(stored: str | None, wanted: str) -> bool:
    if stored is None:
        return wanted.lower() in ("null", "none", "")
    if stored == wanted:
        return True
    try:
        return float(stored) == float(wanted)
    except ValueError:
        return stored.lower() == wanted.lower() and wanted.lower() in ("true", "false")


def holds_params(params: Mapping[str, Any], wanted: Mapping[str, str]) -> bool:
    """Whether a run's ``params`` hold every ``key=value`` of ``wanted`` (values as a selector
    compares them: ``0.01`` equals ``0.010``, ``null`` a missing value's NULL)."""
    return all(k in params and _same(_text(params[k]), v) for k, v in wanted.items())


def select(
    store: Store,
    selector: str,
    *,
    experiment: str | None = None,
    seed_param: str = "seed",
) -> Unit:
    """The configuration ``selector`` (``key=value[,key=value...]``) names: the runs whose
    params hold those values, which must form one configuration (differ only in
    ``seed_param``).

    Raises:
        InvalidInput: no run matches, or the matching runs are of several experiments or
            configurations (the message lists them and says which parameter tells them
            apart).
    """
    wanted = parse_selector(selector)
    table = configs(store, seed_param=seed_param)
    params = {
        int(run_id): json.loads(text)
        for run_id, text in queries.fetch_rows(
            store.con, "compare/run_params", {"experiment": experiment}
        )
    }
    chosen = []
    for row in table.iter_rows(named=True):
        p = params.get(row["run_id"])
        if p is None:
            continue
        if holds_params(p, wanted):
            chosen.append(row)
    where = f" in experiment {experiment!r}" if experiment else ""
    if not chosen:
        raise InvalidInput(f"-g {selector}: no run{where} has params {selector}")
    exps = sorted({r["experiment"] for r in chosen})
    if len(exps) > 1:
        raise InvalidInput(
            f"-g {selector}: runs of several experiments match ({', '.join(exps)}); "
            "choose one with --experiment"
        )
    found = sorted({r["config_key"] for r in chosen})
    if len(found) > 1:
        keys = _differing([params[r["run_id"]] for r in chosen], seed_param)
        if not keys:
            raise InvalidInput(
                f"-g {selector}: the {len(chosen)} runs that match have no parameter "
                f"{seed_param!r}, so they are not seeds of one configuration; name the "
                "parameter that tells them apart with --seed-param"
            )
        raise InvalidInput(
            f"-g {selector}: the runs that match are {len(found)} configurations, not one "
            f"(they differ in {', '.join(keys)} besides {seed_param}); add those to the "
            f"selector, e.g. -g {selector},{keys[0]}=..."
        )
    chosen.sort(key=lambda r: (_seed_key(r["seed"]), r["run"]))
    return Unit(
        label=label(exps[0], [r["name"] for r in chosen], chosen[0]["config"]),
        experiment=exps[0],
        config=chosen[0]["config"],
        run_ids=tuple(int(r["run_id"]) for r in chosen),
        seeds=tuple(r["seed"] for r in chosen),
        group=True,
    )


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return json.dumps(value)


def _seed_key(seed: str | None) -> tuple[float, str]:
    try:
        return (float(seed), "") if seed is not None else (float("inf"), "")
    except ValueError:
        return (float("inf"), seed or "")


def _differing(params: list[dict[str, Any]], seed_param: str) -> list[str]:
    keys = sorted({k for p in params for k in p} - {seed_param})
    return [k for k in keys if len({json.dumps(p.get(k), sort_keys=True) for p in params}) > 1]


def run_unit(store: Store, ref: RunRef, *, seed_param: str = "seed") -> Unit:
    """One run as a :class:`Unit`; a run with training steps, its rows its last step's
    (:mod:`~evalstore.analysis.step_runs`)."""
    run_id = store.resolve(ref)
    info = store.run(run_id)
    seed = info["params"].get(seed_param) if isinstance(info["params"], dict) else None
    return Unit(
        label=f"{info['experiment']}/{info['name']}",
        experiment=info["experiment"],
        config="",
        run_ids=(step_map(store, [run_id]).get(run_id, run_id),),
        seeds=(_text(seed),),
    )


def config_unit(store: Store, ref: RunRef, *, seed_param: str = "seed") -> Unit:
    """The configuration of a run as a :class:`Unit`: the runs of its experiment that differ
    from it only in ``seed_param`` (the run alone when it has no seed)."""
    run_id = store.resolve(ref)
    table = configs(store, seed_param=seed_param)
    mine = table.filter(pl.col("run_id") == run_id).row(0, named=True)
    rows = table.filter(
        (pl.col("experiment") == mine["experiment"]) & (pl.col("config_key") == mine["config_key"])
    ).rows(named=True)
    rows.sort(key=lambda r: (_seed_key(r["seed"]), r["run"]))
    return Unit(
        label=label(mine["experiment"], [r["name"] for r in rows], mine["config"]),
        experiment=mine["experiment"],
        config=mine["config"],
        run_ids=tuple(int(r["run_id"]) for r in rows),
        seeds=tuple(r["seed"] for r in rows),
        group=True,
    )
