"""evalstore metric test: a user's metric's SQL against its Python twin."""

from __future__ import annotations

from typing import Annotated

import typer

from evalstore.cli.common import app, command, out

metric_app = typer.Typer(
    help="Your own metrics (SQL files in --metrics-dir, $EVALSTORE_METRICS or ./metrics/).",
    no_args_is_help=True,
)
app.add_typer(metric_app, name="metric")


@command("test", group=metric_app)
def test_cmd(
    name: Annotated[str, typer.Argument(help="The metric's name.", show_default=False)],
    seeds: Annotated[int, typer.Option("--seeds", help="Random runs to draw.")] = 20,
) -> None:
    """Compare a metric's SQL with its Python twin (entry point group evalstore.metrics.registry) on
    random ranked lists, under every tie policy its SQL takes; exit 1 at a disagreement."""
    from evalstore.analysis.twins import check_twin
    from evalstore.errors import InvalidInput

    problems = check_twin(name, seeds=seeds)
    if problems:
        for line in problems[:20]:
            out.print(line, markup=False)
        raise InvalidInput(
            f"{name}: SQL and twin disagree in {len(problems)} place(s) over {seeds} runs"
        )
    out.print(f"{name}: SQL and twin agree on {seeds} random runs", markup=False)
