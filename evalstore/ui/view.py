"""What a page of the UI shows, as its URL says it: :class:`View` parses a query string and
writes one back (:meth:`View.href`), so that a link reproduces a view.

The keys (each repeatable where it is a list): ``experiment``, ``tag``, ``param``
(``key=value``), ``where`` (a SQL predicate over ``v_runs``, as ``evalstore runs --where``)
filter the runs; ``unit`` picks runs (``exp/name``) or configurations (``g:exp/name``, the
configuration of that run) for the compare, curves and per-list pages, by name so that a link
outlives a rebuilt store (a run id, ``12`` or ``g12``, as older links have it, is still
accepted); ``baseline`` is the unit the others are compared with; ``group`` shows
configurations instead of runs; ``col`` the columns chosen, ``sort`` and ``desc`` the order;
``series`` the history's metric; ``task`` and ``metric`` what the compare page shows (empty:
every one); ``q`` the SQL page's query.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any
from urllib.parse import urlencode

from evalstore.errors import InvalidInput

__all__ = ["FILTERS", "GROUP", "Unit", "View", "parse_unit", "unit_token"]

#: The view's fields that filter the runs (the navigation keeps them from page to page).
FILTERS = ("experiment", "tag", "param", "where")
_ID = re.compile(r"^(g?)([0-9]{1,18})$")
#: What marks a configuration in a unit (``g:exp/name``).
GROUP = "g:"


@dataclass(frozen=True)
class Unit:
    """A run or the configuration of a run that the URL names: ``ref`` is the run as
    :func:`evalstore.runs.registry.resolve` takes it (``exp/name``; ``id:12`` from an older
    link's ``12``)."""

    ref: str
    group: bool

    @property
    def token(self) -> str:
        return f"{GROUP}{self.ref}" if self.group else self.ref


def unit_token(run: str, *, group: bool = False) -> str:
    """The URL's token of the run ``run`` (``exp/name``), or of its configuration."""
    return f"{GROUP}{run}" if group else run


def parse_unit(text: str) -> Unit:
    """``exp/name`` -> that run, ``g:exp/name`` -> its configuration; ``12`` -> the run
    with id 12 and ``g12`` its configuration (the links of earlier versions).

    Raises:
        InvalidInput: an empty unit.
    """
    bare = text.strip()
    found = _ID.match(bare)
    if found is not None:
        return Unit(f"id:{found.group(2)}", bool(found.group(1)))
    group = bare.startswith(GROUP)
    ref = bare.removeprefix(GROUP).strip() if group else bare
    if not ref:
        raise InvalidInput(f"unit {text!r}: name a run (exp/name) or a configuration (g:exp/name)")
    return Unit(ref, group)


@dataclass(frozen=True)
class View:
    """The selection of a page (module docstring); empty tuples and strings select all."""

    experiment: tuple[str, ...] = ()
    tag: tuple[str, ...] = ()
    param: tuple[str, ...] = ()
    where: str = ""
    unit: tuple[str, ...] = ()
    baseline: str = ""
    group: bool = False
    col: tuple[str, ...] = ()
    sort: str = ""
    desc: bool = True
    series: str = ""
    task: str = ""
    metric: str = ""
    q: str = ""

    @classmethod
    def parse(cls, items: Sequence[tuple[str, str]]) -> View:
        """The view of a query string's (key, value) pairs; unknown keys are ignored (a link
        of a later version still opens), blank values dropped.

        Raises:
            InvalidInput: an empty unit or baseline (``g:`` alone).
        """
        lists: dict[str, list[str]] = {}
        for key, value in items:
            lists.setdefault(key, []).append(value)
        values: dict[str, Any] = {}
        for f in fields(cls):
            given = [v for v in lists.get(f.name, []) if v.strip()]
            if f.type == "tuple[str, ...]":
                values[f.name] = tuple(dict.fromkeys(v.strip() for v in given))
            elif f.type == "bool":
                raw = lists.get(f.name, [])
                values[f.name] = (raw[-1] not in ("0", "false", "")) if raw else f.default
            else:
                values[f.name] = given[-1] if given else ""
        view = cls(**values)
        for token in (*view.unit, *([view.baseline] if view.baseline else [])):
            parse_unit(token)
        return view

    @property
    def units(self) -> list[Unit]:
        """The units picked, the baseline first when it is one of them."""
        found = [parse_unit(t) for t in self.unit]
        if self.baseline:
            base = parse_unit(self.baseline)
            found = [base, *[u for u in found if u != base]]
        return found

    @property
    def params(self) -> dict[str, str]:
        """The ``param`` filters as {key: value}.

        Raises:
            InvalidInput: a filter without ``=`` or a key.
        """
        out = {}
        for item in self.param:
            key, eq, value = item.partition("=")
            if not eq or not key.strip():
                raise InvalidInput(f"param filter {item!r}: write KEY=VALUE (e.g. lr=0.01)")
            out[key.strip()] = value.strip()
        return out

    def query(self) -> list[tuple[str, str]]:
        """The (key, value) pairs of this view's URL (defaults left out)."""
        pairs: list[tuple[str, str]] = []
        for f in fields(self):
            value = getattr(self, f.name)
            if value == f.default:
                continue
            if isinstance(value, tuple):
                pairs += [(f.name, v) for v in value]
            elif isinstance(value, bool):
                pairs.append((f.name, "1" if value else "0"))
            else:
                pairs.append((f.name, value))
        return pairs

    def href(self, path: str, **changes: Any) -> str:
        """The URL of ``path`` showing this view with ``changes`` (field=value)."""
        text = urlencode(replace(self, **changes).query())
        return f"{path}?{text}" if text else path

    def filters(self) -> Mapping[str, Any]:
        """The run filters alone (what the nav keeps from page to page)."""
        return {name: getattr(self, name) for name in FILTERS}

    @property
    def filtered(self) -> bool:
        """Whether any filter is set."""
        return any(self.filters().values())
