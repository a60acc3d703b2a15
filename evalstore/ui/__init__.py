"""``evalstore ui``: a live local web app to explore, filter and compare the runs of a store.

The pages (:mod:`~evalstore.ui.pages`): runs (``/``: sortable, filtered by experiment, tag,
params and a ``--where`` predicate, columns chosen by the user, seeds grouped into
configurations with mean ± sd), compare (runs or configurations against a baseline, with
intervals and Holm-adjusted p-values, per-list differences and scatter, what changed),
curves (PR and MMA), history, per list (heatmaps per task) and SQL (read-only, with a CSV
download). The URL holds the selection (:mod:`~evalstore.ui.view`), so a link reproduces a
view. The figures are the dashboards' own (:mod:`evalstore.dashboards`).

The app (:mod:`~evalstore.ui.app`) is Starlette served by uvicorn; it opens the store
read-only for each request and holds nothing between requests, so ingests proceed while it
runs. :func:`serve` binds the address first (a port in use is one clear error) and says
where the app is.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Callable
from pathlib import Path

from evalstore.errors import EvalstoreError
from evalstore.store import Store
from evalstore.ui.app import HEADERS, create_app

__all__ = ["HEADERS", "create_app", "serve", "url_of"]


def url_of(host: str, port: int) -> str:
    """The app's address (IPv6 hosts in brackets)."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def serve(
    db: str | Path,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    lock_timeout: float = 10.0,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve the store ``db`` until interrupted (Ctrl-C returns normally); ``on_ready`` is
    told the URL once the port is bound (port 0: a free port).

    Raises:
        EvalstoreError: the store cannot be opened read-only (missing, not a store, newer or
            older than this evalstore), or the address cannot be bound (naming it).
    """
    import uvicorn

    with Store(db, read_only=True, lock_timeout=lock_timeout):
        pass  # the same checks as every command, once, before serving
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        sock = socket.create_server((host, port), family=family, reuse_port=False)
    except OSError as exc:
        hint = (
            " (another app uses it: pass --port, or --port 0 for a free one)"
            if (exc.errno == errno.EADDRINUSE)
            else ""
        )
        raise EvalstoreError(f"cannot listen on {host}:{port}: {exc.strerror}{hint}") from None
    trusted = "*" if host in ("0.0.0.0", "::") else host
    app = create_app(db, lock_timeout=lock_timeout, host=trusted)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    if on_ready is not None:
        on_ready(url_of(host, sock.getsockname()[1]))
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass  # Ctrl-C: uvicorn has shut down cleanly, then raised it again
    finally:
        sock.close()
