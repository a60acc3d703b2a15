"""Dashboard specs: TOML files -> validated :class:`Dashboard` objects (no database).

A spec (``dashboards/*.toml``) has a ``title``, a ``description`` and ``[[panels]]``; each
panel names a query (a named query from ``sql/dashboards/``, or inline ``sql``), a ``kind``
of chart and the columns to draw (``x``, ``y``, ``z``, ``color``, ``facet``, ``error``). See
``docs/dashboards.md``. :func:`load_spec` reads and validates one, naming the file and the
panel in every error. The default specs are the checkout's top-level ``dashboards/`` folder,
shipped in the wheel as ``evalstore/dashboards/specs/`` (:func:`dashboards_dir`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalstore.db import queries, sandbox
from evalstore.errors import EvalstoreError, InvalidInput

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 (requires-python >= 3.10)
    import tomli as tomllib

__all__ = [
    "AXES",
    "ERROR_KINDS",
    "KINDS",
    "LINE_KINDS",
    "Dashboard",
    "Panel",
    "dashboards_dir",
    "default_specs",
    "load_spec",
]

KINDS = (
    "line", "scatter", "bar", "heatmap", "table", "pr_curve", "comparison", "leaderboard",
    "confusion",
)  # fmt: skip
#: The panel fields that name a column of the query result.
AXES = ("x", "y", "z", "color", "facet", "error", "line_group")
#: The kinds that draw ``error`` (a spread around ``y``): lines as a band, marks as bars.
ERROR_KINDS = ("line", "scatter", "bar")
#: The kinds that take ``best_so_far`` and ``line_group`` (lines along x).
LINE_KINDS = ("line", "scatter")
_REQUIRED_AXES = {
    "line": ("x", "y"),
    "scatter": ("x", "y"),
    "bar": ("x", "y"),
    "heatmap": ("x", "y", "z"),
    "table": (),
    "pr_curve": (),
    "comparison": (),
    "leaderboard": (),
    "confusion": (),
}
_PANEL_KEYS = {
    "title", "description", "kind", "query", "sql", *AXES, "best_so_far", "columns", "hover",
    "params", "limit", "facet_cols", "empty", "x_title", "y_title", "skip_empty",
}  # fmt: skip
_SPEC_KEYS = {"title", "description", "panels"}
_FILTERS = ("experiments", "runs")


@dataclass(frozen=True)
class Panel:
    """One panel of a dashboard, as declared in its spec (see docs/dashboards.md)."""

    index: int
    title: str
    kind: str
    query: str | None = None
    sql: str | None = None
    x: str | None = None
    y: str | None = None
    z: str | None = None
    color: str | None = None
    facet: str | None = None
    error: str | None = None
    line_group: str | None = None
    description: str = ""
    best_so_far: bool = False
    columns: tuple[str, ...] = ()
    hover: tuple[str, ...] = ()
    params: tuple[tuple[str, Any], ...] = ()
    limit: int = 200
    facet_cols: int = 2
    empty: str = ""
    x_title: str = ""
    y_title: str = ""
    skip_empty: bool = False  # no section at all when the query returns no rows
    where: str = field(default="", compare=False)  # "FILE: panel N ('title')", for errors

    def __post_init__(self) -> None:
        if not self.where:
            object.__setattr__(self, "where", f"panel {self.index} ({self.title!r})")

    @property
    def div_id(self) -> str:
        """The fixed id of the panel's element in the page: ``panel-<n>``."""
        return f"panel-{self.index}"


@dataclass(frozen=True)
class Dashboard:
    """A parsed spec: its file stem names the page (``overview`` -> ``overview.html``)."""

    name: str
    title: str
    description: str
    panels: tuple[Panel, ...]
    path: Path


def dashboards_dir() -> Path:
    """The folder of the default specs: ``specs/`` inside the installed package, or the
    top-level ``dashboards/`` folder of a checkout."""
    here = Path(__file__).resolve().parent  # evalstore/dashboards
    installed, checkout = here / "specs", here.parent.parent / "dashboards"
    for candidate in (installed, checkout):
        if candidate.is_dir() and any(candidate.glob("*.toml")):
            return candidate
    raise EvalstoreError(f"cannot find evalstore's dashboard specs in {installed} or {checkout}")


def default_specs() -> list[Path]:
    """The default dashboard specs: the overview first, then by file name."""
    return sorted(dashboards_dir().glob("*.toml"), key=lambda p: (p.stem != "overview", p.name))


def _query_name(ref: str) -> str:
    return ref if "/" in ref else f"dashboards/{ref}"


def _panel(path: Path, index: int, raw: Any) -> Panel:
    where = f"{path}: panel {index}"
    if not isinstance(raw, dict):
        raise InvalidInput(f"{where}: a panel is a table ([[panels]]), got {type(raw).__name__}")
    title = raw.get("title")
    if isinstance(title, str) and title.strip():
        where = f"{path}: panel {index} ({title!r})"
    else:
        raise InvalidInput(f"{where}: needs a non-empty `title`")
    unknown = sorted(set(raw) - _PANEL_KEYS)
    if unknown:
        raise InvalidInput(
            f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(_PANEL_KEYS))}"
        )
    kind = raw.get("kind")
    if kind not in KINDS:
        raise InvalidInput(f"{where}: unknown kind {kind!r}; use one of {', '.join(KINDS)}")
    for key in ("description", "query", "sql", "empty", "x_title", "y_title", *AXES):
        if key in raw and not (isinstance(raw[key], str) and raw[key].strip()):
            raise InvalidInput(f"{where}: `{key}` must be a non-empty string")
    if ("query" in raw) == ("sql" in raw):
        raise InvalidInput(f"{where}: give either `query` (a named query) or `sql`, not both")
    if "query" in raw:
        name = _query_name(raw["query"])
        try:
            text = queries.load(name).text  # a name of sql/ only: no `..`, no full path
        except EvalstoreError:
            known = ", ".join(n.removeprefix("dashboards/") for n in _panel_queries())
            raise InvalidInput(
                f"{where}: unknown query {raw['query']!r}; queries under sql/dashboards/: {known}"
            ) from None
        # a named query runs outside the sandbox, so only one that reads
        sandbox.check_query(None, text, f"{where}: query {raw['query']!r}")
    for axis in _REQUIRED_AXES[kind]:
        if axis not in raw:
            raise InvalidInput(f"{where}: a {kind} panel needs `{axis}` (a column name)")
    for key in ("best_so_far", "skip_empty"):
        if raw.get(key, False) not in (True, False):
            raise InvalidInput(f"{where}: `{key}` must be true or false")
    for key in ("best_so_far", "line_group"):
        if raw.get(key) and kind not in LINE_KINDS:
            raise InvalidInput(
                f"{where}: `{key}` applies to {' and '.join(LINE_KINDS)} panels only, not {kind}"
            )
    if "error" in raw and kind not in ERROR_KINDS:
        raise InvalidInput(
            f"{where}: `error` applies to {', '.join(ERROR_KINDS)} panels only, not {kind}"
        )
    lists = {}
    for key in ("columns", "hover"):
        value = raw.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise InvalidInput(f"{where}: `{key}` must be a list of column names")
        lists[key] = tuple(value)
    params = raw.get("params", {})
    if not isinstance(params, dict) or set(params) & set(_FILTERS):
        raise InvalidInput(
            f"{where}: `params` must be a table of query parameters other than "
            "experiments and runs (those come from the filters)"
        )
    ints = {}
    for key, default, low in (("limit", 200, 1), ("facet_cols", 2, 1)):
        value = raw.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise InvalidInput(f"{where}: `{key}` must be an integer >= {low}")
        ints[key] = value
    if kind == "pr_curve" and params.get("ties", "grouped") not in (
        "grouped",
        "optimistic",
        "pessimistic",
        "input",
    ):
        raise InvalidInput(f"{where}: unknown ties {params['ties']!r}")
    extra: dict[str, Any] = {**{a: raw.get(a) for a in AXES}, **ints}
    return Panel(
        index=index,
        title=title,
        kind=kind,
        query=_query_name(raw["query"]) if "query" in raw else None,
        sql=raw.get("sql"),
        description=raw.get("description", ""),
        best_so_far=bool(raw.get("best_so_far", False)),
        skip_empty=bool(raw.get("skip_empty", False)),
        columns=lists["columns"],
        hover=lists["hover"],
        params=tuple(sorted(params.items())),
        empty=raw.get("empty", ""),
        x_title=raw.get("x_title", ""),
        y_title=raw.get("y_title", ""),
        where=where,
        **extra,
    )


def _panel_queries() -> list[str]:
    return queries.names_with_prefix("dashboards/")


def load_spec(path: str | Path) -> Dashboard:
    """Read and validate a dashboard spec.

    Raises:
        InvalidInput: unreadable or invalid TOML, an unknown key or kind, a missing axis, an
            unknown query; the message names the file and the panel.
    """
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read the dashboard spec: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path}: not a valid TOML dashboard spec: {exc}") from None
    unknown = sorted(set(raw) - _SPEC_KEYS)
    if unknown:
        raise InvalidInput(f"{path}: unknown key(s) {', '.join(unknown)}; known: title, "
                           "description, panels")  # fmt: skip
    if path.stem == "index":
        raise InvalidInput(f"{path}: a dashboard cannot be called index (the index page)")
    title = raw.get("title")
    if not isinstance(title, str) or not title.strip():
        raise InvalidInput(f"{path}: needs a non-empty `title`")
    description = raw.get("description", "")
    if not isinstance(description, str):
        raise InvalidInput(f"{path}: `description` must be a string")
    panels = raw.get("panels")
    if not isinstance(panels, list) or not panels:
        raise InvalidInput(f"{path}: needs at least one [[panels]] table")
    return Dashboard(
        name=path.stem,
        title=title,
        description=description,
        panels=tuple(_panel(path, i + 1, p) for i, p in enumerate(panels)),
        path=path,
    )
