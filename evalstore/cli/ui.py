"""evalstore ui: the live local app over a store."""

from __future__ import annotations

from typing import Annotated

import typer

from evalstore.cli.common import DbOpt, command, err


@command("ui")
def ui_cmd(
    db: DbOpt = None,
    host: Annotated[
        str,
        typer.Option("--host", help="Address to listen on (0.0.0.0: every network, careful)."),
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port (0: a free one).")
    ] = 8765,
    lock_timeout: Annotated[
        float,
        typer.Option("--lock-timeout", help="Seconds a page waits while a writer holds the store."),
    ] = 10.0,
) -> None:
    """Explore the store in a browser: runs, compare, curves, history, per list, SQL.

    The store is opened read-only for each request and closed after it, so ingests proceed
    while the app runs. Ctrl-C stops it.
    """
    from evalstore.db.connection import default_path
    from evalstore.ui import serve

    path = db or default_path()

    def ready(url: str) -> None:
        err.print(f"evalstore ui: {path} (read-only) at {url}  (Ctrl-C to stop)", markup=False)

    serve(path, host=host, port=port, lock_timeout=lock_timeout, on_ready=ready)
