"""The pickers on the Compare, Curves and Per list pages: the runs and configurations that
pass the filters, to choose on the page (each sets the URL's ``unit`` keys, by name), so that
no page sends the user back to the Runs page or to a command's option.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from evalstore.ui import data
from evalstore.ui.shell import hidden
from evalstore.ui.view import FILTERS, parse_unit, unit_token

if TYPE_CHECKING:
    from evalstore.store.facade import Store
    from evalstore.ui.view import View

__all__ = ["PICKABLE", "picker"]

#: Runs (and configurations) a picker offers at most (the newest that pass the filters).
PICKABLE = 200

_e = html.escape


def _choices(store: Store, view: View) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(token, label) of the runs that pass the filters (newest first, at most PICKABLE)
    and of their configurations of more than one run."""
    runs = data.filtered_runs(store, view).head(PICKABLE)
    names = runs["run"].to_list()
    run_choices = [(unit_token(n), n) for n in names]
    if not names:
        return run_choices, []
    table, _ = data.config_table(store, runs)
    configs = [
        (str(t), str(c))
        for t, c, n in table.select("unit", "configuration", "n_runs").rows()
        if n > 1
    ]
    return run_choices, configs


def picker(store: Store, view: View, path: str, *, open_: bool = False) -> str:
    """A form that chooses the runs and configurations ``path`` shows (its ``unit`` keys),
    among those that pass the filters; the picked ones selected. ``open_``: shown unfolded
    (nothing is picked yet)."""
    runs, configs = _choices(store, view)
    picked = {parse_unit(t).token for t in view.unit} | set(view.unit)
    offered = {t for t, _ in runs} | {t for t, _ in configs}
    # a unit of the URL that is not among the choices (another filter, an id) stays picked
    extra = [(t, t) for t in view.unit if t not in offered and parse_unit(t).token not in offered]

    def options(pairs: list[tuple[str, str]]) -> str:
        return "".join(
            f'<option value="{_e(t)}"{" selected" if t in picked else ""}>{_e(text)}</option>'
            for t, text in pairs
        )

    groups = f'<optgroup label="runs">{options(runs)}</optgroup>'
    if configs:
        groups += f'<optgroup label="configurations (seeds)">{options(configs)}</optgroup>'
    if extra:
        groups += f'<optgroup label="picked">{options(extra)}</optgroup>'
    keep = hidden(view, (*FILTERS, "series", "task", "metric"))
    size = min(12, max(4, len(runs) + len(configs) + 2))
    said = f"{len(view.unit)} picked" if view.unit else "none picked"
    return (
        f'<details class="picker" id="picker"{" open" if open_ else ""}>'
        f"<summary>Choose runs or configurations ({said}; "
        f"{len(runs)} run(s) pass the filters)</summary>"
        f'<form method="get" action="{_e(path)}">{keep}'
        f'<select name="unit" id="pick-units" multiple size="{size}">{groups}</select>'
        '<div class="actions"><button type="submit" id="pick-show">Show</button>'
        "<span>Ctrl- or Shift-click to choose several; the filters above narrow the "
        "list.</span></div></form></details>"
    )
