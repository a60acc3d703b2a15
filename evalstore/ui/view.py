"""What a page of the UI shows, as its URL says it: :class:`View` parses a query string and
writes one back (:meth:`View.href`), so that a link reproduces a view.

The keys (each repeatable where it is a list): ``experiment``, ``tag``, ``param``
(``key=value``), ``where`` (a SQL predicate over ``v_runs``, as ``evalstore runs --where``)
filter the runs; ``unit`` picks runs (``12``, a run id) or configurations (``g12``, the
configuration of run 12) for the compare, curves and per-list pages; ``baseline`` is the unit
the others are compared with; ``group`` shows configurations instead of runs; ``col`` the
columns chosen, ``sort`` and ``desc`` the order; ``series`` the history's metric; ``q`` the
SQL page's query.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any
from urllib.parse import urlencode

from evalstore.errors import InvalidInput

__all__ = ["FILTERS", "Unit", "View", "parse_unit"]

#: The view's fields that filter the runs (the navigation keeps them from page to page).
FILTERS = ("experiment", "tag", "param", "where")
_UNIT = re.compile(r"^(g?)([0-9]{1,18})$")


@dataclass(frozen=True)
class Unit:
    """A run (``12``) or the configuration of a run (``g12``) that the URL names."""

    run_id: int
    group: bool

    @property
    def token(self) -> str:
        return f"g{self.run_id}" if self.group else str(self.run_id)


def parse_unit(text: str) -> Unit:
    """``12`` -> the run 12, ``g12`` -> its configuration.

    Raises:
        InvalidInput: anything else.
    """
    found = _UNIT.match(text.strip())
    if found is None:
        raise InvalidInput(
            f"unit {text!r}: a run id (12) or g and a run id (g12, the run's configuration)"
        )
    return Unit(int(found.group(2)), bool(found.group(1)))


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
    q: str = ""

    @classmethod
    def parse(cls, items: Sequence[tuple[str, str]]) -> View:
        """The view of a query string's (key, value) pairs; unknown keys are ignored (a link
        of a later version still opens), blank values dropped.

        Raises:
            InvalidInput: a unit or baseline that is not a run id or ``g`` and a run id.
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
