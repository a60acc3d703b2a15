"""Users' metrics as files: a folder of SQL files, one metric each, registered beside the
built-in ones, so that ``eval``, ``metrics``, ``compare``, ``check``, ``history``, ``groups``,
the dashboards and Spark know them (docs/user-metrics.md).

A file is a header of ``-- key: value`` comment lines, then one SQL statement::

    -- metric: hit_at_1
    -- tasks: retrieval, matching
    -- direction: higher
    -- params: k=1
    -- kind: per_list
    -- Any other comment line is free text.
    select ...

- ``metric``: its name (lower case, ``[a-z][a-z0-9_]*``), not a built-in metric's or mean's;
- ``tasks``: the tasks it applies to (ranked lists: verification, matching, retrieval,
  classification; or keypoints, outcomes or detection, which read other tables: a detection
  metric reads the matches of every protocol, made before it runs, det_matches and the others
  of sql/schema/017_detections.sql);
- ``direction``: ``higher`` or ``lower`` is better;
- ``params`` (optional): ``name=default`` pairs, each a ``$name`` of the SQL (``k`` is set by
  ``--k``; the others take their defaults);
- ``kind`` (optional): ``per_list`` (default: one row per list, ``run_id, group_id, value``;
  its mean over lists is reported under ``mean``, default the metric's name) or ``global``
  (one row per run, ``group_id`` NULL);
- ``mean`` (optional): the name of the mean of a ``per_list`` metric.

The SQL reads the store's tables and views with ``$runs`` (integer[]), ``$task`` and ``$ties``
and may include the built-in fragments (``-- @include lib/ranking_points.sql``). It is read
anew each time it runs: an edit changes its definition SHA, so the values computed before are
stale and recomputed. A file that cannot be used is refused in one line naming it and what is
wrong: the header, a statement that does not parse or bind, output columns other than
``run_id, group_id, value``.

Folders: those given (``--metrics-dir``), then ``$EVALSTORE_METRICS`` (paths separated by
``os.pathsep``), then ``./metrics/`` when it exists. A metric's Python twin,
``reference(inputs, params) -> Result`` as every built-in one has, comes from an entry point of
the group ``evalstore.metrics`` named like the metric (or :func:`register_twin`);
:func:`check_twin` (``evalstore metric test NAME``) compares SQL and twin on random lists.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import duckdb

from evalstore.db import queries, sandbox, schema
from evalstore.errors import EvalstoreError, InvalidInput
from evalstore.metrics import registry as metrics
from evalstore.metrics.registry import ALL_TASKS, Metric, Params, Reference, Result

__all__ = [
    "ENTRY_POINTS",
    "ENV",
    "compute",
    "forget_twin",
    "load_metrics",
    "metric_dirs",
    "read_metric",
    "register_twin",
]

ENV = "EVALSTORE_METRICS"
ENTRY_POINTS = "evalstore.metrics"
RANKED_TASKS = ("verification", "matching", "retrieval", "classification")
_SOURCES = {"keypoints": "pairs", "outcomes": "outcomes", "detection": "detections"}
_HEADER = re.compile(r"^--\s*([a-z_]+)\s*:\s*(.*?)\s*$")
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_KEYS = ("metric", "tasks", "direction", "params", "kind", "mean")
_TWINS: dict[str, Reference] = {}


def metric_dirs(given: Sequence[str | os.PathLike[str]] = ()) -> list[Path]:
    """The folders of users' metrics: ``given``, ``$EVALSTORE_METRICS``, ``./metrics/``."""
    found = [Path(p) for p in given]
    found += [Path(p) for p in os.environ.get(ENV, "").split(os.pathsep) if p]
    if Path("metrics").is_dir():
        found.append(Path("metrics"))
    out: list[Path] = []
    for path in found:
        if path.resolve() not in {p.resolve() for p in out}:
            out.append(path)
    return out


def load_metrics(dirs: Sequence[str | os.PathLike[str]] | None = None) -> list[str]:
    """Register the metrics of every ``*.sql`` file of the folders (:func:`metric_dirs` when
    None), with their Python twins where an entry point gives one. Returns their names.

    Raises:
        InvalidInput: a folder that is missing, a file that cannot be used, two files of one
            name (each message names the file).
    """
    folders = metric_dirs() if dirs is None else [Path(d) for d in dirs]
    seen: dict[str, Path] = {}
    found = []
    for folder in folders:
        if not folder.is_dir():
            raise InvalidInput(f"{folder}: no such folder of metrics")
        for path in sorted(folder.glob("*.sql")):
            metric = read_metric(path)
            if metric.name in seen:
                raise InvalidInput(f"{path}: metric {metric.name!r} is also {seen[metric.name]}")
            seen[metric.name] = path
            found.append(metric)
    twins = _entry_point_twins({m.name for m in found})
    for metric in found:
        twin = _TWINS.get(metric.name) or twins.get(metric.name)
        metrics.register(_with_twin(metric, twin) if twin is not None else metric)
    return [m.name for m in found]


def register_twin(name: str, reference: Reference) -> None:
    """Give the user's metric ``name`` its Python twin (an entry point does it too)."""
    _TWINS[name] = reference
    if name in metrics.METRICS and metrics.METRICS[name].path is not None:
        metrics.register(_with_twin(metrics.METRICS[name], reference))


def forget_twin(name: str) -> None:
    """Drop the twin :func:`register_twin` gave ``name`` (entry points are read at load)."""
    _TWINS.pop(name, None)


def read_metric(path: Path) -> Metric:
    """The metric of one file, checked: its header, and its SQL parsed and bound on an empty
    store, with the output columns ``run_id, group_id, value``.

    Raises:
        InvalidInput: what is wrong, naming the file.
    """
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path}: cannot read: {exc}") from None
    header = _header(text, path)
    name = header.get("metric", "")
    if not _NAME.match(name):
        raise InvalidInput(f"{path}: the header's '-- metric: NAME' is missing or not a name")
    tasks = tuple(t.strip() for t in header.get("tasks", "").split(",") if t.strip())
    unknown = [t for t in tasks if t not in ALL_TASKS]
    if not tasks or unknown:
        raise InvalidInput(
            f"{path}: '-- tasks:' must list tasks among {', '.join(ALL_TASKS)}"
            + (f" (not {unknown[0]!r})" if unknown else "")
        )
    sources = {_SOURCES.get(t, "scores") for t in tasks}
    if len(sources) > 1:
        raise InvalidInput(f"{path}: tasks of different tables ({', '.join(tasks)})")
    direction = header.get("direction")
    if direction not in ("higher", "lower"):
        raise InvalidInput(f"{path}: '-- direction:' must be higher or lower, not {direction!r}")
    kind = header.get("kind", "per_list")
    if kind not in ("per_list", "global"):
        raise InvalidInput(f"{path}: '-- kind:' must be per_list or global, not {kind!r}")
    defaults = _params(header.get("params", ""), path)
    mean = header.get("mean", name)
    if not _NAME.match(mean):
        raise InvalidInput(f"{path}: '-- mean:' {mean!r} is not a name")
    for taken in {name, mean}:
        if taken in metrics.BUILT_IN:
            raise InvalidInput(f"{path}: {taken!r} is a built-in metric's name; choose another")
    metric = Metric(
        name,
        _no_twin(name),
        tasks,
        direction == "higher",
        mean,
        params=tuple(defaults),
        source=sources.pop(),
        doc=f"{path} (a user's metric)",
        path=path,
        defaults=defaults,
    )
    _check_sql(metric, path)
    return metric


def _header(text: str, path: Path) -> dict[str, str]:
    header: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line.lstrip().startswith("--"):
            break
        m = _HEADER.match(line.strip())
        if m and m.group(1) in _KEYS:
            if m.group(1) in header:
                raise InvalidInput(f"{path}: '-- {m.group(1)}:' given twice")
            header[m.group(1)] = m.group(2)
    return header


def _params(text: str, path: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in (p.strip() for p in text.split(",") if p.strip()):
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not _NAME.match(key) or key in ("runs", "task", "ties"):
            raise InvalidInput(f"{path}: '-- params:' takes name=default pairs, not {item!r}")
        try:
            number = float(value)
        except ValueError:
            out[key] = value
            continue
        out[key] = int(number) if number.is_integer() and "." not in value else number
    return out


def _check_sql(metric: Metric, path: Path) -> None:
    """Parse and bind the SQL on an empty store of the current schema; its columns."""
    try:
        text = metric.query.text
    except EvalstoreError as exc:
        raise InvalidInput(str(exc)) from None
    try:
        statements = duckdb.extract_statements(text)
    except duckdb.Error as exc:
        raise InvalidInput(f"{path}: {_first_line(exc)}") from None
    if len(statements) != 1:
        raise InvalidInput(f"{path}: holds {len(statements)} SQL statements; a metric is one")
    con = duckdb.connect()
    try:
        con.execute(schema.fresh_schema()[1])
        sandbox.lock_down(con)  # binding reads a table function's file: none here
        task = metric.tasks[0]
        values = metric.sql_params([], task, Params(k=metric.defaults.get("k")))
        probe = queries.template("store/metric_columns", query=text)
        columns = [d[0] for d in con.execute(probe, queries.bind(probe, values)).description]
    except duckdb.Error as exc:
        raise InvalidInput(f"{path}: {_first_line(exc)}") from None
    finally:
        con.close()
    if columns[:3] != ["run_id", "group_id", "value"]:
        raise InvalidInput(
            f"{path}: returns columns {', '.join(columns)}; a metric returns run_id, group_id, "
            "value"
        )


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0]


def compute(
    con: duckdb.DuckDBPyConnection, metric: Metric, run_ids: list[int], bind: dict[str, Any]
) -> Any:
    """A user's metric's rows (an Arrow table) for the runs ``run_ids``, computed in the
    sandbox of ``evalstore sql``: its SQL runs in a database of its own, in memory, holding
    the rows of those runs in the store ``con`` (and the tables of no run), with external
    access off and settings locked, so no file, folder, URL or other database is reached and
    nothing is written; the caller stores the rows.

    Raises:
        InvalidInput: the metric is refused or fails (one line naming its file).
    """
    box = duckdb.connect()
    try:
        box.execute(schema.fresh_schema()[1])
        for table, by_run, by_list in queries.fetch_rows(box, "store/box_tables"):
            name = queries.quote_name(table)
            key = "box_rows_of_runs" if by_run else "box_rows_of_lists" if by_list else None
            text = queries.template(f"store/{key}" if key else "store/table_rows", table=name)
            rows = con.sql(text, params=queries.bind(text, {"runs": run_ids}))
            box.register("_rows", rows.to_arrow_table())
            try:
                box.execute(queries.template("store/box_clear", table=name))
                box.execute(queries.template("store/box_fill", table=name))
            finally:
                box.unregister("_rows")
        sandbox.lock_down(box)
        text = metric.query.text
        return sandbox.run_query(
            box, text, queries.bind(text, bind), max_rows=2**62, timeout=None,
            where=str(metric.path), failed="the metric failed",
            read_hint="a metric reads the store only",
        ).frame.to_arrow()  # fmt: skip
    finally:
        box.close()


def _no_twin(name: str) -> Reference:
    def reference(inputs: Any, params: Params) -> Result:
        raise InvalidInput(
            f"metric {name!r} has no Python twin: register one (entry point group "
            f"{ENTRY_POINTS!r}, or evalstore.metrics.user.register_twin)"
        )

    return reference


def _with_twin(metric: Metric, twin: Reference) -> Metric:
    return dataclasses.replace(metric, reference=twin)


def _entry_point_twins(names: set[str]) -> dict[str, Reference]:
    twins = {}
    for ep in entry_points(group=ENTRY_POINTS):
        if ep.name in names:
            try:
                twins[ep.name] = ep.load()
            except Exception as exc:
                raise InvalidInput(
                    f"entry point {ep.name} = {ep.value} ({ENTRY_POINTS}): cannot load: "
                    f"{type(exc).__name__}: {exc}"
                ) from None
    return twins
